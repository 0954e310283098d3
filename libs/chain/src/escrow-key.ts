import { getBytes, hexlify, isHexString, toBeHex, zeroPadValue } from 'ethers';
import { validate as isUuid } from 'uuid';

/** Highest escrow attempt number: the attempt takes bytes 12–15 of the key (uint32). */
export const MAX_ESCROW_ATTEMPT = 0xffffffff;

/**
 * On-chain escrow id (bytes32, lowercase 0x hex) of a checkout/escrow UUID and its escrow attempt:
 * bytes 0–11 zero, bytes 12–15 the attempt (uint32, big-endian), bytes 16–31 the UUID's 16 bytes.
 * Attempt 0 is the UUID left-padded with zeros, so `idFromEscrowKey` maps every chain event back to
 * its row; a buyer's cancel moves the checkout to the next attempt (docs/architecture.md §13).
 * Throws TypeError when `uuid` is not a UUID or `attempt` is not an integer in 0…MAX_ESCROW_ATTEMPT.
 */
export function escrowKeyFromId(uuid: string, attempt = 0): string {
  if (!isUuid(uuid)) throw new TypeError(`escrowKeyFromId: not a UUID: ${uuid}`);
  if (!Number.isInteger(attempt) || attempt < 0 || attempt > MAX_ESCROW_ATTEMPT) throw new TypeError(`escrowKeyFromId: bad attempt ${attempt}`);
  const id = uuid.replace(/-/g, '').toLowerCase();
  return zeroPadValue(attempt === 0 ? `0x${id}` : `${toBeHex(attempt, 4)}${id}`, 32);
}

/**
 * Inverse of escrowKeyFromId: the lowercase hyphenated UUID and the attempt of a bytes32 escrow key.
 * Throws TypeError when the key is not 32 bytes or its bytes 0–11 are not zero (not created from a UUID).
 */
export function escrowKeyParts(escrowKey: string): { id: string; attempt: number } {
  if (!isHexString(escrowKey, 32)) throw new TypeError(`idFromEscrowKey: not a bytes32 value: ${escrowKey}`);
  const bytes = getBytes(escrowKey);
  if (bytes.subarray(0, 12).some((b) => b !== 0)) {
    throw new TypeError(`idFromEscrowKey: escrow key was not derived from a UUID: ${escrowKey}`);
  }
  const attempt = ((bytes[12] << 24) | (bytes[13] << 16) | (bytes[14] << 8) | bytes[15]) >>> 0;
  const hex = hexlify(bytes.subarray(16)).slice(2);
  return { id: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`, attempt };
}

/** The UUID part of an escrow key ({@link escrowKeyParts}); throws the same TypeError. */
export function idFromEscrowKey(escrowKey: string): string {
  return escrowKeyParts(escrowKey).id;
}
