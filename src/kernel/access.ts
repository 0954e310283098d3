import type { Principal } from './auth/principal';
import { AppError } from '../common/errors/app-error';
import type { Access } from './operation';

/**
 * The one scope and credential-kind check (DESIGN §3, §17), for every transport: the REST guard,
 * MCP tools (listing and calls) and A2A skills.
 * @returns the refusal, or null when `principal` may run it: 403 missing_scope (`details.required`,
 *   `details.granted`) when no scope of `access.scopes` is held (after `:*` and write⇒read
 *   expansion), then 403 forbidden when the credential kind is not one of `access.kinds`
 *   (`details.reason`: `agent_key_required` when only agent keys may, else `merchant_credential_required`).
 */
export function accessRefusal(principal: Principal, access: Access): AppError | null {
  const required = access.scopes;
  if (required.length > 0 && !required.some((s) => principal.scopes.has(s))) {
    return new AppError('missing_scope', `This operation needs scope ${required.join(' or ')}`, { required: [...required], granted: principal.grantedScopes });
  }
  const kinds = access.kinds;
  if (kinds && !kinds.includes(principal.kind)) {
    return kinds.length === 1 && kinds[0] === 'agent'
      ? new AppError('forbidden', 'This operation needs an agent key', { reason: 'agent_key_required' })
      : new AppError('forbidden', `This operation needs a ${kinds.join(' or ')} credential`, { reason: 'merchant_credential_required', allowed: [...kinds] });
  }
  return null;
}

/** {@link accessRefusal}, thrown. @throws AppError 403 missing_scope or forbidden. */
export function authorize(principal: Principal, access: Access): void {
  const refusal = accessRefusal(principal, access);
  if (refusal) throw refusal;
}

/** The credential kinds that act for an organisation as merchant: merchant keys, OAuth tokens and console sessions (DESIGN §19). */
export const MERCHANT_KINDS = ['merchant', 'oauth', 'console'] as const;
