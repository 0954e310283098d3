import type { StoredPolicy } from './agent-policy';

/** An agent row as the agents module reads it (the sealed key only through {@link AgentsRepository.sealedKey}). */
export interface AgentRow {
  id: string;
  organizationId: string;
  slug: string;
  name: string | null;
  ownerAddress: string;
  paused: boolean;
  signerEnabled: boolean;
  signerAddress: string | null;
  policy: StoredPolicy | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Where a payee handle points: an organisation's payout address or an agent's signer wallet. */
export interface PayeeTarget {
  /** `address`: a raw address (x402 payTo of another server); no id or organisation then. */
  kind: 'organization' | 'agent' | 'address';
  id: string;
  organizationId: string;
  handle: string;
  address: string | null;
}

/** Sums of an agent's payments counting toward its policy (base units). */
export interface AgentUsage {
  usedToday: bigint;
  usedThisMonth: bigint;
  /** pending + submitted: reserved but not yet used on chain. */
  open: bigint;
}

