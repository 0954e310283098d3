import { createPrivateKey, sign as signData } from 'node:crypto';
import { SDJwtInstance } from '@sd-jwt/core';
import { parseAmount } from '@lib/money';
import { type BaseWallet, computeAddress, hexlify, randomBytes, SigningKey } from 'ethers';
import { didPkh, INTENT_MANDATE_DOMAIN_NAME, INTENT_MANDATE_DOMAIN_VERSION, INTENT_MANDATE_TYPES, MandateTerms, SD_JWT_MANDATE_VCT, sdJwtHasher, sdJwtSalt } from './mandate-credentials';

/**
 * The owner's side of a mandate (docs/architecture.md §14), for the demo command and tests: what a
 * wallet or an AP2 credential issuer produces. The service never signs mandates itself.
 */

/**
 * Signs the EIP-712 IntentMandate for `terms` with the owner wallet and returns the whole
 * `credential` object of POST /mandates (format "eip712"). `nonce` defaults to 32 random bytes.
 */
export async function signIntentMandate(owner: BaseWallet, chainId: number, agentSlug: string, terms: MandateTerms, nonce: string = hexlify(randomBytes(32))): Promise<Record<string, unknown>> {
  const domain = { name: INTENT_MANDATE_DOMAIN_NAME, version: INTENT_MANDATE_DOMAIN_VERSION, chainId };
  const message = { agent: agentSlug, payees: terms.payees, maxAmountPerPayment: terms.maxAmountPerPayment, totalAmount: terms.totalAmount, currency: 'USDC', expiresAt: terms.expiresAt, description: terms.description, nonce };
  const signature = await owner.signTypedData(domain, INTENT_MANDATE_TYPES, message);
  return {
    format: 'eip712',
    domain,
    types: INTENT_MANDATE_TYPES,
    primaryType: 'IntentMandate',
    message,
    signature,
    signer: owner.address,
    intentMandate: { user_cart_confirmation_required: false, natural_language_description: terms.description, merchants: terms.payees, intent_expiry: terms.expiresAt },
  };
}

/** The secp256k1 JWK (RFC 8812) of a 0x private key; `d` only when `withPrivate`. */
export function secp256k1Jwk(privateKey: string, withPrivate: boolean): Record<string, string> {
  const pub = Buffer.from(new SigningKey(privateKey).publicKey.slice(4), 'hex');
  const jwk: Record<string, string> = { kty: 'EC', crv: 'secp256k1', x: pub.subarray(0, 32).toString('base64url'), y: pub.subarray(32).toString('base64url') };
  if (withPrivate) jwk.d = Buffer.from(privateKey.slice(2), 'hex').toString('base64url');
  return jwk;
}

/**
 * Issues an AP2 v0.2 open payment mandate as an SD-JWT signed ES256K with `privateKey` (the owner),
 * `iss` = did:pkh of its address, the public key in the header `jwk`, `description` selectively
 * disclosed; the terms' decimal-text amounts become base-unit constraints. `claims` overrides or adds claims (tests use it to break one rule at a time).
 */
export async function issueSdJwtMandate(
  privateKey: string,
  chainId: number,
  agentSlug: string,
  terms: MandateTerms,
  claims: Record<string, unknown> = {},
): Promise<string> {
  const key = createPrivateKey({ key: secp256k1Jwk(privateKey, true), format: 'jwk' });
  const sd = new SDJwtInstance({
    hasher: sdJwtHasher,
    saltGenerator: sdJwtSalt,
    signAlg: 'ES256K',
    signer: (data: string) => signData('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
  });
  const payload = {
    vct: SD_JWT_MANDATE_VCT,
    iss: didPkh(chainId, computeAddress(privateKey)),
    sub: agentSlug,
    jti: hexlify(randomBytes(16)),
    iat: Math.floor(Date.now() / 1000),
    exp: Math.floor(Date.parse(terms.expiresAt) / 1000),
    description: terms.description,
    constraints: [
      { type: 'payment.allowed_payees', allowed: terms.payees },
      { type: 'payment.amount_range', currency: 'USDC', max: parseAmount(terms.maxAmountPerPayment).toString() },
      { type: 'payment.budget', currency: 'USDC', max: parseAmount(terms.totalAmount).toString() },
    ],
    ...claims,
  };
  return sd.issue(payload, { _sd: ['description'] } as never, { header: { typ: 'dc+sd-jwt', jwk: secp256k1Jwk(privateKey, false) } });
}

