import type { Principal } from './auth/principal';
import { AppError } from '../common/errors/app-error';
import type { Access } from './operation';

/**
 * The one scope and credential-kind check (DESIGN §3, §17), for every transport: the REST guard,
 * MCP tools (listing and calls) and A2A skills.
 * @returns the refusal, or null when `principal` may run it: 404 not_found (organization) for a
 *   console session acting for one agent it owns (DESIGN §19) unless `access.consoleActs` is
 *   `agent-owner`; then 403 missing_scope (`details.required`, `details.granted`) when no scope of
 *   `access.scopes` is held (after `:*` and write⇒read expansion); then 403 forbidden when the
 *   credential kind is not one of `access.kinds` (`details.reason`: `agent_key_required` when only
 *   agent keys may, `console_session_required` when only a console session may, else
 *   `merchant_credential_required`).
 */
export function accessRefusal(principal: Principal, access: Access): AppError | null {
  // A console session acting for one agent it owns (not its organisation) runs that agent's operations only.
  if (principal.kind === 'console' && principal.agentId !== null && access.consoleActs !== 'agent-owner') return AppError.notFound('organization');
  const required = access.scopes;
  if (required.length > 0 && !required.some((s) => principal.scopes.has(s))) {
    return new AppError('missing_scope', `This operation needs scope ${required.join(' or ')}`, { required: [...required], granted: principal.grantedScopes });
  }
  const kinds = access.kinds;
  if (kinds && !kinds.includes(principal.kind)) {
    if (kinds.length === 1 && kinds[0] === 'console') return new AppError('forbidden', 'This operation is taken from the console by an owner', { reason: 'console_session_required' });
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
