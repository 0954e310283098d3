import { USDC_IFACE } from './tx-sender';

/** EIP-712 types of EIP-3009 ReceiveWithAuthorization, as USDC FiatTokenV2 hashes them. */
export const RECEIVE_WITH_AUTHORIZATION_TYPES = {
  ReceiveWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

/** EIP-712 types of EIP-3009 TransferWithAuthorization (USDC FiatTokenV2): the same fields as ReceiveWithAuthorization. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: RECEIVE_WITH_AUTHORIZATION_TYPES.ReceiveWithAuthorization,
};

/** EIP-712 types of EIP-3009 CancelAuthorization. */
export const CANCEL_AUTHORIZATION_TYPES = {
  CancelAuthorization: [
    { name: 'authorizer', type: 'address' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

/**
 * A signed EIP-3009 authorization (Transfer- or ReceiveWithAuthorization: the same message): `value` base
 * units from `from` to `to`, usable once while validAfter < block time < validBefore (unix seconds,
 * exclusive bounds as in EIP-3009); `nonce` a bytes32; `signature` the 65-byte serialized signature.
 */
export interface Eip3009Authorization {
  from: string;
  to: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
  signature: string;
}

/** The message of an EIP-3009 use call, as {@link decodeAuthorizationCall} reads it from calldata. */
export interface Eip3009Call extends Omit<Eip3009Authorization, 'signature'> {
  /** Which EIP-3009 use the calldata is. */
  method: 'transferWithAuthorization' | 'receiveWithAuthorization';
}

/**
 * The authorization in calldata of USDC `transferWithAuthorization` or `receiveWithAuthorization` (the
 * v, r, s form that {@link UsdcGateway.encodeTransferWithAuthorization} and the escrow's funding encode;
 * ABI of the token's artifact). `from`/`to` checksummed, `nonce` lowercase hex.
 * @returns null for calldata that is neither (another call, undecodable bytes).
 */
export function decodeAuthorizationCall(data: string): Eip3009Call | null {
  let call;
  try {
    call = USDC_IFACE.parseTransaction({ data });
  } catch {
    return null;
  }
  if (!call || (call.name !== 'transferWithAuthorization' && call.name !== 'receiveWithAuthorization')) return null;
  const [from, to, value, validAfter, validBefore, nonce] = call.args as unknown as [string, string, bigint, bigint, bigint, string];
  return { method: call.name, from, to, value, validAfter, validBefore, nonce: nonce.toLowerCase() };
}
