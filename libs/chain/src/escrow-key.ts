import { getBytes, hexlify, isHexString, zeroPadValue } from 'ethers';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * On-chain escrow id (bytes32, lowercase 0x hex) of a checkout/escrow UUID: the 16 UUID bytes
 * left-padded with zeros to 32 bytes, so `idFromEscrowKey` can map every chain event back to its row.
 * Throws TypeError when `uuid` is not a UUID.
 */
export function escrowKeyFromId(uuid: string): string {
  if (!UUID_RE.test(uuid)) throw new TypeError(`escrowKeyFromId: not a UUID: ${uuid}`);
  return zeroPadValue(`0x${uuid.replace(/-/g, '').toLowerCase()}`, 32);
}

/**
 * Inverse of escrowKeyFromId: lowercase hyphenated UUID of a bytes32 escrow key. Throws TypeError when
 * the key is not 32 bytes or its upper 16 bytes are not zero (not created from a UUID).
 */
export function idFromEscrowKey(escrowKey: string): string {
  if (!isHexString(escrowKey, 32)) throw new TypeError(`idFromEscrowKey: not a bytes32 value: ${escrowKey}`);
  const bytes = getBytes(escrowKey);
  if (bytes.subarray(0, 16).some((b) => b !== 0)) {
    throw new TypeError(`idFromEscrowKey: escrow key was not derived from a UUID: ${escrowKey}`);
  }
  const hex = hexlify(bytes.subarray(16)).slice(2);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
