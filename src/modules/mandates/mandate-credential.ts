import { SDJwtInstance } from '@sd-jwt/core';
import { decodeProtectedHeader } from 'jose';
import { computeAddress, getAddress, isAddress, isHexString, TypedDataEncoder, verifyTypedData } from 'ethers';
import { createHash, createPublicKey, verify } from 'node:crypto';

/** The terms of a mandate as the API body states them (amounts in base units). */
export interface MandateTerms {
  agentSlug: string;
  payees: string[];
  maxAmountPerPayment: bigint;
  totalAmount: bigint;
  /** The body's `expiresAt` text, exactly as sent (RFC 3339). */
  expiresAtText: string;
  expiresAt: Date;
  description: string;
}

/** Why a credential was refused (`details.reason` of the 400). */
export class MandateCredentialError extends Error {
  constructor(
    readonly reason: 'unsupported_format' | 'bad_signature' | 'wrong_signer' | 'terms_mismatch' | 'wrong_chain' | 'malformed',
    message: string,
  ) {
    super(message);
  }
}

/** EIP-712 domain name and version of our v0.1 IntentMandate profile (docs/architecture.md §14). */
export const INTENT_MANDATE_DOMAIN = { name: 'AP2 Intent Mandate', version: '0.1' } as const;

/** EIP-712 types of the v0.1 IntentMandate profile (docs/architecture.md §14). */
export const INTENT_MANDATE_TYPES = {
  IntentMandate: [
    { name: 'agent', type: 'string' },
    { name: 'payees', type: 'string[]' },
    { name: 'maxAmountPerPayment', type: 'string' },
    { name: 'totalAmount', type: 'string' },
    { name: 'currency', type: 'string' },
    { name: 'expiresAt', type: 'string' },
    { name: 'description', type: 'string' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

/** The IntentMandate message our EIP-712 profile signs for `terms` (amounts as decimal USDC text, as the body). */
export function intentMandateMessage(terms: MandateTerms, amounts: { maxAmountPerPayment: string; totalAmount: string }, nonce: string) {
  return {
    agent: terms.agentSlug,
    payees: terms.payees,
    maxAmountPerPayment: amounts.maxAmountPerPayment,
    totalAmount: amounts.totalAmount,
    currency: 'USDC',
    expiresAt: terms.expiresAtText,
    description: terms.description,
    nonce,
  };
}

const sameList = (a: unknown, b: string[]) => Array.isArray(a) && a.length === b.length && a.every((x, i) => typeof x === 'string' && x.toLowerCase() === b[i].toLowerCase());

/**
 * Verifies the v0.1 IntentMandate in our EIP-712 profile (docs/architecture.md §14): domain
 * {name "AP2 Intent Mandate", version "0.1", chainId}, the IntentMandate types, a message equal to
 * the body's terms (agent slug, currency "USDC", amounts as the body's decimal text), signed by the
 * agent's owner. Verification with ethers (`verifyTypedData`).
 * @returns the credential's nonce (bytes32, lower case).
 * @throws MandateCredentialError.
 */
export function verifyEip712Mandate(
  credential: Record<string, unknown>,
  terms: MandateTerms,
  amounts: { maxAmountPerPayment: string; totalAmount: string },
  owner: string,
  chainId: number,
): string {
  const domain = credential.domain as Record<string, unknown> | undefined;
  const message = credential.message as Record<string, unknown> | undefined;
  const signature = credential.signature;
  if (!domain || !message || typeof signature !== 'string' || credential.primaryType !== 'IntentMandate') {
    throw new MandateCredentialError('malformed', 'credential needs domain, types, primaryType "IntentMandate", message and signature');
  }
  if (domain.name !== INTENT_MANDATE_DOMAIN.name || domain.version !== INTENT_MANDATE_DOMAIN.version) {
    throw new MandateCredentialError('malformed', 'credential.domain must be {name: "AP2 Intent Mandate", version: "0.1", chainId}');
  }
  if (Number(domain.chainId) !== chainId) throw new MandateCredentialError('wrong_chain', `credential.domain.chainId must be ${chainId}`);
  if (typeof message.nonce !== 'string' || !isHexString(message.nonce, 32)) throw new MandateCredentialError('malformed', 'credential.message.nonce must be bytes32');
  const expected = intentMandateMessage(terms, amounts, message.nonce);
  const mismatched = Object.keys(expected).filter((k) =>
    k === 'payees' ? !sameList(message.payees, expected.payees) : String(message[k]) !== String((expected as Record<string, unknown>)[k]),
  );
  if (mismatched.length) throw new MandateCredentialError('terms_mismatch', `credential.message differs from the body in: ${mismatched.join(', ')}`);
  let signer: string;
  try {
    signer = verifyTypedData({ name: INTENT_MANDATE_DOMAIN.name, version: INTENT_MANDATE_DOMAIN.version, chainId }, INTENT_MANDATE_TYPES, { ...expected, payees: message.payees as string[] }, signature);
  } catch {
    throw new MandateCredentialError('bad_signature', 'credential.signature is not a valid EIP-712 signature');
  }
  // A tampered message recovers to some other address: when the credential names its signer, a
  // recovery to anyone else is a broken signature; a named signer other than the owner is the wrong signer.
  const claimed = typeof credential.signer === 'string' && isAddress(credential.signer) ? getAddress(credential.signer) : null;
  if (claimed && signer !== claimed) throw new MandateCredentialError('bad_signature', 'credential.signature does not recover to credential.signer (tampered or wrongly signed)');
  if (signer !== getAddress(owner)) throw new MandateCredentialError('wrong_signer', "the credential is not signed by the agent's owner");
  return (message.nonce as string).toLowerCase();
}

/** SHA-256 for SD-JWT disclosures (RFC 9901 / draft-ietf-oauth-selective-disclosure-jwt). */
const sha256 = (data: string | ArrayBuffer): Uint8Array => new Uint8Array(createHash('sha256').update(typeof data === 'string' ? data : Buffer.from(data)).digest());

/**
 * Verifies an AP2 v0.2 mandate credential as an SD-JWT (docs/architecture.md §14): ES256K over the key in
 * the header `jwk` (secp256k1; checked with node:crypto, since jose's Web Crypto has no secp256k1),
 * disclosures and `exp` checked by `@sd-jwt/core`; the key's Ethereum address must be the owner's
 * and `iss` = `did:pkh:eip155:<chainId>:<owner>`. Claims: `agent` (slug), `payees`,
 * `maxAmountPerPayment` and `totalAmount` (USDC base units, decimal text or integers), `currency`
 * "USDC", `exp` (= the body's expiresAt, seconds), `nonce`; each must equal the body's terms.
 * @returns the credential's nonce.
 * @throws MandateCredentialError.
 */
export async function verifySdJwtMandate(token: unknown, terms: MandateTerms, owner: string, chainId: number): Promise<string> {
  if (typeof token !== 'string' || !token.includes('~')) throw new MandateCredentialError('malformed', 'credential.token must be an SD-JWT (issuer JWT~disclosures~)');
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(token.split('~')[0]) as Record<string, unknown>;
  } catch {
    throw new MandateCredentialError('malformed', 'credential.token has no readable JWT header');
  }
  const jwk = header.jwk as Record<string, string> | undefined;
  if (header.alg !== 'ES256K' || !jwk || jwk.kty !== 'EC' || jwk.crv !== 'secp256k1' || !jwk.x || !jwk.y || 'd' in jwk) {
    throw new MandateCredentialError('malformed', 'the SD-JWT header must carry alg ES256K and a public secp256k1 jwk');
  }
  const key = createPublicKey({ key: { kty: 'EC', crv: 'secp256k1', x: jwk.x, y: jwk.y }, format: 'jwk' });
  const address = computeAddress('0x04' + Buffer.from(jwk.x, 'base64url').toString('hex') + Buffer.from(jwk.y, 'base64url').toString('hex'));
  if (address !== getAddress(owner)) throw new MandateCredentialError('wrong_signer', "the SD-JWT key is not the agent's owner");
  const sd = new SDJwtInstance({
    hasher: sha256,
    hashAlg: 'sha-256',
    verifier: (data: string, sig: string) => verify('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url')),
  });
  let payload: Record<string, unknown>;
  try {
    payload = (await sd.verify(token)).payload as Record<string, unknown>;
  } catch (err) {
    throw new MandateCredentialError('bad_signature', `the SD-JWT does not verify: ${(err as Error).message}`);
  }
  if (payload.iss !== `did:pkh:eip155:${chainId}:${getAddress(owner)}` && String(payload.iss).toLowerCase() !== `did:pkh:eip155:${chainId}:${owner.toLowerCase()}`) {
    throw new MandateCredentialError('wrong_signer', `iss must be did:pkh:eip155:${chainId}:<owner address>`);
  }
  const units = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : typeof v === 'string' && /^\d{1,78}$/.test(v) ? BigInt(v) : null);
  const mismatched: string[] = [];
  if (payload.agent !== terms.agentSlug) mismatched.push('agent');
  if (!sameList(payload.payees, terms.payees)) mismatched.push('payees');
  if (units(payload.maxAmountPerPayment) !== terms.maxAmountPerPayment) mismatched.push('maxAmountPerPayment');
  if (units(payload.totalAmount) !== terms.totalAmount) mismatched.push('totalAmount');
  if (payload.currency !== 'USDC') mismatched.push('currency');
  if (payload.exp !== Math.floor(terms.expiresAt.getTime() / 1000)) mismatched.push('exp');
  if (typeof payload.nonce !== 'string' || payload.nonce.length < 8 || payload.nonce.length > 128) mismatched.push('nonce');
  if (mismatched.length) throw new MandateCredentialError('terms_mismatch', `the SD-JWT claims differ from the body in: ${mismatched.join(', ')}`);
  return payload.nonce as string;
}

/** The EIP-712 digest of an IntentMandate (for tests and operators). */
export function intentMandateDigest(chainId: number, message: ReturnType<typeof intentMandateMessage>): string {
  return TypedDataEncoder.hash({ ...INTENT_MANDATE_DOMAIN, chainId }, INTENT_MANDATE_TYPES, message);
}
