/** The verification snapshot `GET /me` shows (docs/architecture.md §12). */
export interface VerificationSnapshot {
  status: 'unverified' | 'pending' | 'verified' | 'rejected';
}

/**
 * Port through which `OrgsService.me` reads an organisation's verification snapshot; the
 * verification module implements it (it depends on orgs for payout addresses, so orgs cannot
 * import it back).
 */
export abstract class VerificationSnapshotSource {
  abstract snapshot(organizationId: string): Promise<VerificationSnapshot>;
}
