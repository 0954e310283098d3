/**
 * Port through which mandates reads how much of each mandate is used: the sum of its pending,
 * submitted and succeeded payments (docs/architecture.md §13), in base units. The sums are over the
 * `payments` table, which the payments module owns and which depends on mandates, so mandates cannot
 * import it back (issue 31; the same pattern as orgs' VerificationSnapshotSource). The payments module
 * implements it. In the caller's transaction, if any.
 */
export abstract class MandateUsageSource {
  /** usedAmount per mandate of `ids` (0 for a mandate with no counted payment). */
  abstract usedAmounts(ids: string[]): Promise<Map<string, bigint>>;
}
