import { tokenRefusal } from '@lib/chain';
import { AppError } from './app-error';

/** How long a client should wait before retrying while USDC is paused (a pause lasts minutes to days). */
const PAUSED_RETRY_AFTER_S = '60';

/**
 * The API answer when USDC itself refuses a transfer (DESIGN §18, docs/decisions.md "USDC as it really is"),
 * or null when `err` is something else:
 * - paused → 503 `unavailable` with Retry-After, `details.reason: "token_paused"`: nothing was sent, the
 *   same signed authorization can be relayed again once the issuer unpauses;
 * - blacklisted → 400 `invalid_request`, `details.reason: "address_blocked"`: a party of the transfer is on
 *   the issuer's blacklist; retrying does not help.
 */
export function tokenRefusalError(err: unknown): AppError | null {
  switch (tokenRefusal(err)) {
    case 'paused':
      return new AppError(
        'unavailable',
        'USDC transfers are paused by the token issuer; nothing was sent. Try again later with the same signature',
        { reason: 'token_paused' },
        503,
        { 'Retry-After': PAUSED_RETRY_AFTER_S },
      );
    case 'blacklisted':
      return new AppError('invalid_request', 'The USDC issuer blocks transfers from or to an address of this payment', { reason: 'address_blocked' });
    default:
      return null;
  }
}
