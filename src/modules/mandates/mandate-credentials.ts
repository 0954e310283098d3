import { createHash, createPublicKey, KeyObject, randomBytes, verify as verifySignature } from 'node:crypto';
import { SDJwtInstance } from '@sd-jwt/core';
import { computeAddress, getAddress, hexlify, isAddress, isHexString, verifyTypedData } from 'ethers';
import { parseAmount } from '@lib/money';
import { AppError } from '../../common/errors/app-error';

/** EIP-712 domain name and version of our profile of the AP2 v0.1 IntentMandate (docs/architecture.md §14). */
export const INTENT_MANDATE_DOMAIN_NAME = 'AP2 Intent Mandate';
export const INTENT_MANDATE_DOMAIN_VERSION = '0.1';

/** IntentMandate{agent, payees, maxAmountPerPayment, totalAmount, currency, expiresAt, description, nonce} (docs/architecture.md §14). */
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

/** The only AP2 v0.2 credential type accepted: an open payment mandate (constraints, no fixed payment). */
export const SD_JWT_MANDATE_VCT = 'mandate.payment.open.1';
/** The constraint types of an open payment mandate this service evaluates; any other → 400 (AP2 v0.2: unknown constraints fail). */
export const SD_JWT_CONSTRAINTS = ['payment.allowed_payees', 'payment.amount_range', 'payment.budget'] as const;

/**
 * The terms of a mandate as the request body states them: amounts are USDC decimal text ("20.00",
 * docs/architecture.md §6, §17), expiresAt ISO-8601. The EIP-712 message states the amounts as the
 * same decimal text; an SD-JWT credential states them in base units (AP2 v0.2 constraints).
 */
export interface MandateTerms {
  payees: string[];
  maxAmountPerPayment: string;
  totalAmount: string;
  expiresAt: string;
  description: string;
}

/** Base units of a decimal-text amount as a decimal string, or null when it is not canonical decimal text. */
function decimalUnits(v: unknown): string | null {
  try {
    return parseAmount(v).toString();
  } catch {
    return null;
  }
}

/** What a credential is checked against: our chain, the agent's slug and its owner wallet. */
export interface MandateContext {
  chainId: number;
  agentSlug: string;
  ownerAddress: string;
  /** Current time (expiry checks). */
  now: Date;
}

/** A verified credential: its single-use nonce (bytes32 hex for EIP-712, the `jti` for SD-JWT). */
export interface VerifiedCredential {
  format: 'eip712' | 'sd-jwt';
  nonce: string;
}

/** A 400 invalid_request with `details.reason` (docs/architecture.md §4). */
function reject(reason: string, message: string, extra: Record<string, unknown> = {}): never {
  throw new AppError('invalid_request', message, { reason, ...extra });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Base units as a canonical decimal string, from a JSON integer or digit string; null otherwise. */
function baseUnits(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return String(v);
  if (typeof v === 'string' && /^[1-9]\d{0,77}$/.test(v)) return v;
  return null;
}

function sameList(a: unknown, b: string[]): boolean {
  return Array.isArray(a) && a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Verifies a mandate credential in either accepted format (docs/architecture.md §14) against the
 * body's terms. Signature checks are local (no network). Expiry is checked by the caller.
 * @throws AppError 400 invalid_request with details.reason: unsupported_format, malformed,
 *   wrong_chain, signer_not_owner, bad_signature, unsupported_alg, unsupported_vct,
 *   unknown_constraint, unsupported_currency, terms_mismatch (details.field).
 */
export async function verifyMandateCredential(credential: unknown, terms: MandateTerms, ctx: MandateContext): Promise<VerifiedCredential> {
  if (!isRecord(credential)) reject('unsupported_format', 'credential must be an object with format "eip712" or "sd-jwt"');
  if (credential.format === 'eip712') return verifyEip712Mandate(credential, terms, ctx);
  if (credential.format === 'sd-jwt') return verifySdJwtMandate(credential.token, terms, ctx);
  return reject('unsupported_format', 'credential.format must be "eip712" or "sd-jwt"');
}

/**
 * The EIP-712 form (our profile of the AP2 v0.1 IntentMandate, docs/architecture.md §14): domain
 * {name "AP2 Intent Mandate", version "0.1", chainId = ours}, types exactly {@link INTENT_MANDATE_TYPES},
 * the message equal to the body's terms (`agent` = the slug, `currency` = "USDC"), recovered with
 * ethers `verifyTypedData` to the owner address, `signer` = that address, `intentMandate` (the v0.1
 * fields) consistent with the terms where it states them.
 * @throws AppError 400 as {@link verifyMandateCredential}.
 */
export function verifyEip712Mandate(cred: Record<string, unknown>, terms: MandateTerms, ctx: MandateContext): VerifiedCredential {
  const { domain, types, message, signature, signer, intentMandate } = cred;
  if (!isRecord(domain) || domain.name !== INTENT_MANDATE_DOMAIN_NAME || domain.version !== INTENT_MANDATE_DOMAIN_VERSION) {
    reject('malformed', `credential.domain must be {name: "${INTENT_MANDATE_DOMAIN_NAME}", version: "${INTENT_MANDATE_DOMAIN_VERSION}", chainId}`);
  }
  if (Object.keys(domain).some((k) => !['name', 'version', 'chainId'].includes(k))) reject('malformed', 'credential.domain has fields other than name, version and chainId');
  if (Number(domain.chainId) !== ctx.chainId || !/^\d+$/.test(String(domain.chainId))) {
    reject('wrong_chain', `credential.domain.chainId must be ${ctx.chainId}`);
  }
  if (!isRecord(types) || JSON.stringify(types.IntentMandate) !== JSON.stringify(INTENT_MANDATE_TYPES.IntentMandate) || Object.keys(types).some((k) => k !== 'IntentMandate' && k !== 'EIP712Domain')) {
    reject('malformed', 'credential.types must be the IntentMandate types of docs/api.md');
  }
  if (cred.primaryType !== 'IntentMandate') reject('malformed', 'credential.primaryType must be "IntentMandate"');
  if (!isRecord(message)) reject('malformed', 'credential.message must be an object');
  if (!isHexString(message.nonce, 32)) reject('malformed', 'credential.message.nonce must be 32 bytes of 0x hex');
  if (message.currency !== 'USDC') reject('unsupported_currency', 'credential.message.currency must be "USDC"');
  if (message.agent !== ctx.agentSlug) reject('terms_mismatch', 'credential.message.agent must be this agent’s slug', { field: 'agent' });
  if (!sameList(message.payees, terms.payees)) reject('terms_mismatch', 'credential.message.payees differ from payees', { field: 'payees' });
  for (const field of ['maxAmountPerPayment', 'totalAmount'] as const) {
    const signed = decimalUnits(message[field]);
    if (signed === null) reject('malformed', `credential.message.${field} must be USDC decimal text, e.g. "20.00"`, { field });
    if (signed !== decimalUnits(terms[field])) reject('terms_mismatch', `credential.message.${field} differs from ${field}`, { field });
  }
  for (const field of ['expiresAt', 'description'] as const) {
    if (message[field] !== terms[field]) reject('terms_mismatch', `credential.message.${field} differs from ${field}`, { field });
  }
  if (typeof signer !== 'string' || !isAddress(signer)) reject('malformed', 'credential.signer must be an address');
  if (getAddress(signer) !== getAddress(ctx.ownerAddress)) reject('signer_not_owner', 'credential.signer is not the agent’s owner');
  if (!isRecord(intentMandate)) reject('malformed', 'credential.intentMandate must be the AP2 v0.1 IntentMandate object');
  if (intentMandate.natural_language_description !== undefined && intentMandate.natural_language_description !== terms.description) {
    reject('terms_mismatch', 'intentMandate.natural_language_description differs from description', { field: 'description' });
  }
  if (intentMandate.intent_expiry !== undefined && intentMandate.intent_expiry !== terms.expiresAt) {
    reject('terms_mismatch', 'intentMandate.intent_expiry differs from expiresAt', { field: 'expiresAt' });
  }
  let recovered: string;
  try {
    recovered = verifyTypedData({ name: INTENT_MANDATE_DOMAIN_NAME, version: INTENT_MANDATE_DOMAIN_VERSION, chainId: ctx.chainId }, INTENT_MANDATE_TYPES, message, signature as string);
  } catch {
    return reject('bad_signature', 'credential.signature is malformed');
  }
  if (getAddress(recovered) !== getAddress(ctx.ownerAddress)) reject('bad_signature', 'credential.signature was not made by the owner over these terms');
  return { format: 'eip712', nonce: (message.nonce as string).toLowerCase() };
}

/** The Ethereum address of a secp256k1 public JWK (RFC 7517/8812), or null when it is not one. */
export function jwkAddress(jwk: unknown): { address: string; key: KeyObject } | null {
  if (!isRecord(jwk) || jwk.kty !== 'EC' || jwk.crv !== 'secp256k1' || typeof jwk.x !== 'string' || typeof jwk.y !== 'string' || 'd' in jwk) return null;
  try {
    const key = createPublicKey({ key: { kty: 'EC', crv: 'secp256k1', x: jwk.x, y: jwk.y }, format: 'jwk' });
    const x = Buffer.from(jwk.x, 'base64url');
    const y = Buffer.from(jwk.y, 'base64url');
    if (x.length !== 32 || y.length !== 32) return null;
    return { address: computeAddress(hexlify(Buffer.concat([Buffer.from([4]), x, y]))), key };
  } catch {
    return null;
  }
}

/** `did:pkh:eip155:<chainId>:<address>` (the did:pkh method, CAIP-10 account id). */
export function didPkh(chainId: number, address: string): string {
  return `did:pkh:eip155:${chainId}:${getAddress(address)}`;
}

/** SHA-256 hasher for @sd-jwt/core (the `_sd_alg` we accept). */
export function sdJwtHasher(data: string | ArrayBuffer, alg: string): Uint8Array {
  if (alg.toLowerCase() !== 'sha-256') throw new Error(`unsupported _sd_alg ${alg}`);
  return new Uint8Array(createHash('sha256').update(typeof data === 'string' ? data : Buffer.from(data)).digest());
}

/** How far an SD-JWT mandate's `iat`/`nbf` may be ahead of the server clock (seconds). */
export const SD_JWT_CLOCK_SKEW_SECONDS = 60;

/** Salt generator for issuing SD-JWTs (tests, demo). */
export function sdJwtSalt(length: number): string {
  return randomBytes(length).toString('base64url');
}

/**
 * The SD-JWT form: an AP2 v0.2 open payment mandate (`vct` {@link SD_JWT_MANDATE_VCT}) issued by the
 * owner as `did:pkh:eip155:<chainId>:<owner>`, signed ES256K with the key in the header `jwk`
 * (whose address must be `ownerAddress`), verified with `@sd-jwt/core` (disclosures and signature;
 * node:crypto checks the ES256K signature, as jose 6 has no secp256k1). Claims: `sub` = the agent
 * slug, `jti` = the single-use nonce, `exp` = expiresAt, `description`, and `constraints`
 * `payment.allowed_payees {allowed}`, `payment.amount_range {currency, max}`, `payment.budget
 * {currency, max}` with currency "USDC" and amounts in USDC base units; each must equal the body.
 * @throws AppError 400 as {@link verifyMandateCredential}.
 */
export async function verifySdJwtMandate(token: unknown, terms: MandateTerms, ctx: MandateContext): Promise<VerifiedCredential> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 20000) reject('malformed', 'credential.token must be an SD-JWT');
  let verifyingKey: KeyObject | null = null;
  const sd = new SDJwtInstance({
    hasher: sdJwtHasher,
    verifier: (data: string, sig: string) => verifyingKey !== null && verifySignature('sha256', Buffer.from(data), { key: verifyingKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url')),
  });
  let header: Record<string, unknown>;
  let unverified: Record<string, unknown>;
  let disclosureDigests: Array<string | undefined>;
  let disclosedValues: unknown[];
  try {
    const decoded = await sd.decode(token);
    header = (decoded.jwt?.header ?? {}) as Record<string, unknown>;
    unverified = (decoded.jwt?.payload ?? {}) as Record<string, unknown>;
    disclosureDigests = (decoded.disclosures ?? []).map((d) => d._digest);
    disclosedValues = (decoded.disclosures ?? []).map((d) => d.value);
  } catch {
    return reject('malformed', 'credential.token is not a valid SD-JWT');
  }
  // RFC 9901 §7.1: every disclosure must be referenced by a digest in the signed payload (or in
  // another disclosure), and none twice; @sd-jwt/core silently drops unreferenced ones.
  const referenced = new Set<string>();
  collectDigests(unverified, referenced);
  for (const v of disclosedValues) collectDigests(v, referenced);
  if (new Set(disclosureDigests).size !== disclosureDigests.length || disclosureDigests.some((d) => d === undefined || !referenced.has(d))) {
    reject('bad_signature', 'credential.token carries a disclosure its issuer did not sign');
  }
  if (header.alg !== 'ES256K') reject('unsupported_alg', 'credential.token must be signed ES256K');
  const owner = jwkAddress(header.jwk);
  if (!owner) reject('malformed', 'credential.token header jwk must be a secp256k1 public key');
  if (getAddress(owner.address) !== getAddress(ctx.ownerAddress)) reject('signer_not_owner', 'credential.token is not signed by the agent’s owner');
  if (typeof unverified.exp === 'number' && unverified.exp * 1000 <= ctx.now.getTime()) reject('expired', 'The mandate has expired');
  verifyingKey = owner.key;
  let claims: Record<string, unknown>;
  try {
    // iat/nbf may run up to a minute ahead of our clock (the owner's clock is not ours); `exp` was
    // already checked strictly above.
    claims = (await sd.verify(token, { currentDate: Math.floor(ctx.now.getTime() / 1000), skewSeconds: SD_JWT_CLOCK_SKEW_SECONDS })).payload as Record<string, unknown>;
  } catch {
    return reject('bad_signature', 'credential.token signature or disclosures do not verify');
  }
  const iss = typeof claims.iss === 'string' ? claims.iss : '';
  const m = /^did:pkh:eip155:(\d+):(0x[0-9a-fA-F]{40})$/.exec(iss);
  if (!m) reject('malformed', 'iss must be did:pkh:eip155:<chainId>:<owner address>');
  if (Number(m[1]) !== ctx.chainId) reject('wrong_chain', `iss must name chain ${ctx.chainId}`);
  if (getAddress(m[2]) !== getAddress(ctx.ownerAddress)) reject('signer_not_owner', 'iss is not the agent’s owner');
  if (claims.vct !== SD_JWT_MANDATE_VCT) reject('unsupported_vct', `vct must be ${SD_JWT_MANDATE_VCT}`);
  if (claims.sub !== ctx.agentSlug) reject('terms_mismatch', 'sub must be this agent’s slug', { field: 'agent' });
  if (typeof claims.jti !== 'string' || claims.jti.length < 1 || claims.jti.length > 128) reject('malformed', 'jti (the single-use nonce) must be a string of 1–128 characters');
  if (typeof claims.exp !== 'number' || claims.exp * 1000 !== Date.parse(terms.expiresAt)) reject('terms_mismatch', 'exp differs from expiresAt', { field: 'expiresAt' });
  if (claims.description !== terms.description) reject('terms_mismatch', 'description differs', { field: 'description' });
  const found = new Map<string, Record<string, unknown>>();
  if (!Array.isArray(claims.constraints)) reject('malformed', 'constraints must be a list');
  for (const c of claims.constraints) {
    if (!isRecord(c) || typeof c.type !== 'string') reject('malformed', 'each constraint needs a type');
    if (!(SD_JWT_CONSTRAINTS as readonly string[]).includes(c.type)) reject('unknown_constraint', `constraint ${c.type} is not supported`, { type: c.type });
    if (found.has(c.type)) reject('malformed', `constraint ${c.type} appears twice`);
    found.set(c.type, c);
  }
  const payees = found.get('payment.allowed_payees');
  if (!payees || !sameList(payees.allowed, terms.payees)) reject('terms_mismatch', 'payment.allowed_payees differs from payees', { field: 'payees' });
  const checks = [
    ['payment.amount_range', 'maxAmountPerPayment'],
    ['payment.budget', 'totalAmount'],
  ] as const;
  for (const [type, field] of checks) {
    const c = found.get(type);
    if (!c) reject('terms_mismatch', `constraint ${type} is required`, { field });
    if (c.currency !== 'USDC') reject('unsupported_currency', `${type}.currency must be "USDC"`);
    if (baseUnits(c.max) !== decimalUnits(terms[field])) reject('terms_mismatch', `${type}.max differs from ${field}`, { field });
  }
  return { format: 'sd-jwt', nonce: claims.jti };
}

/** Digests an SD-JWT payload or disclosed value references: `_sd` arrays and `{"...": digest}` array elements. */
function collectDigests(v: unknown, into: Set<string>): void {
  if (Array.isArray(v)) {
    for (const item of v) collectDigests(item, into);
    return;
  }
  if (!isRecord(v)) return;
  for (const [k, value] of Object.entries(v)) {
    if (k === '_sd' && Array.isArray(value)) for (const d of value) if (typeof d === 'string') into.add(d);
    if (k === '...' && typeof value === 'string') into.add(value);
    collectDigests(value, into);
  }
}
