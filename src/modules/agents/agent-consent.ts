import { keccak256, toUtf8Bytes } from 'ethers';
import type { StoredPolicy } from './agent-policy';
import { OWNER_DOMAIN_NAME, OWNER_DOMAIN_VERSION } from './owner-messages';

/**
 * AgentConsent{agentId, action, payloadHash, nonce, deadline} (DESIGN §19 "Whose float it is"): the
 * agent owner's EIP-712 consent to one action another console session takes on its agent. Same owner
 * domain as EnableSigner. `agentId` is the agent's id, or for `create_agent` the new agent's slug.
 */
export const AGENT_CONSENT_TYPES = {
  AgentConsent: [
    { name: 'agentId', type: 'string' },
    { name: 'action', type: 'string' },
    { name: 'payloadHash', type: 'bytes32' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'deadline', type: 'uint256' },
  ],
};

/** The actions that need the agent owner (DESIGN §19). */
export type ConsentAction = 'raise_policy' | 'resume' | 'create_pay_key' | 'create_agent';

/** Agent scopes that let a key move the float: paying (payments, x402, A2A) and funding agent escrows. */
export const SPENDING_SCOPES = ['agent:pay', 'agent:escrow:fund'] as const;

/** JSON with object keys sorted at every level (the text hashed into `payloadHash`). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * `payloadHash` = keccak256 of the UTF-8 canonical JSON of the action's payload (docs/api.md
 * "Agent owner consent"): `raise_policy` the policy as the API renders it (decimal text),
 * `create_pay_key` `{scopes}` sorted, `resume` `{}`, `create_agent` `{organizationId, ownerAddress, slug}`.
 */
export function consentPayloadHash(payload: unknown): string {
  return keccak256(toUtf8Bytes(canonicalJson(payload)));
}

/** EIP-712 typed data for `eth_signTypedData_v4` (with its `EIP712Domain` entry). */
export function consentTypedData(chainId: number, message: { agentId: string; action: ConsentAction; payloadHash: string; nonce: string; deadline: number }) {
  return {
    domain: { name: OWNER_DOMAIN_NAME, version: OWNER_DOMAIN_VERSION, chainId },
    types: {
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'version', type: 'string' },
        { name: 'chainId', type: 'uint256' },
      ],
      ...AGENT_CONSENT_TYPES,
    },
    primaryType: 'AgentConsent' as const,
    message,
  };
}

const LIMITS = ['perTransactionMax', 'dailyLimit', 'monthlyLimit', 'approvalThreshold'] as const;

/**
 * The fields in which `next` loosens `current` (DESIGN §19: any limit up or unset, recipients widened —
 * an empty or absent list means any —, mode towards autonomous, validity window extended). From no
 * policy (nothing may be spent) every policy is a raise. Amounts are base-unit strings (StoredPolicy).
 */
export function policyRaises(current: StoredPolicy | null, next: StoredPolicy): string[] {
  if (!current) return ['policy'];
  const raised: string[] = [];
  for (const f of LIMITS) {
    const was = current[f];
    const now = next[f];
    if (was !== undefined && (now === undefined || BigInt(now) > BigInt(was))) raised.push(f);
  }
  const wasList = current.allowedRecipients ?? [];
  const nowList = next.allowedRecipients ?? [];
  if (wasList.length > 0 && (nowList.length === 0 || nowList.some((r) => !wasList.includes(r)))) raised.push('allowedRecipients');
  if ((current.mode ?? 'autonomous') === 'mandate' && (next.mode ?? 'autonomous') === 'autonomous') raised.push('mode');
  if (current.validFrom !== undefined && (next.validFrom === undefined || Date.parse(next.validFrom) < Date.parse(current.validFrom))) raised.push('validFrom');
  if (current.expiresAt !== undefined && (next.expiresAt === undefined || Date.parse(next.expiresAt) > Date.parse(current.expiresAt))) raised.push('expiresAt');
  return raised;
}

/**
 * The `details` of a 403 forbidden `agent_owner_consent_required` (docs/api.md "Agent owner
 * consent"): the action refused, the agent owner's checksummed address, `problem` when a consent was
 * sent and refused (`malformed`, `expired`, `bad_signature`), and the AgentConsent typed data the
 * owner would sign (fresh 32-byte nonce, `deadline` in unix seconds). The console page reads these
 * names through this type, so renaming one here fails its typecheck.
 */
export interface AgentConsentRefusal {
  reason: 'agent_owner_consent_required';
  action: ConsentAction;
  ownerAddress: string;
  problem?: string;
  typedData: ReturnType<typeof consentTypedData>;
}
