import { hexlify, randomBytes, Wallet } from 'ethers';
import { AppError } from '../../common/errors/app-error';
import { MandateContext, MandateTerms, verifyMandateCredential } from './mandate-credentials';
import { issueSdJwtMandate, signIntentMandate } from './mandate-signing';

const owner = Wallet.createRandom();
const other = Wallet.createRandom();
const terms: MandateTerms = {
  payees: ['acme', '0x00000000000000000000000000000000000000aa'],
  maxAmountPerPayment: '20.00',
  totalAmount: '100.00',
  expiresAt: new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d{3}Z$/, '.000Z'),
  description: 'API credits from acme',
};
const ctx: MandateContext = { chainId: 31337, agentSlug: 'bot-1', ownerAddress: owner.address, now: new Date() };

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    return String((err as AppError).details?.reason);
  }
  throw new Error('accepted');
}

describe('EIP-712 IntentMandate credential (docs/architecture.md §14)', () => {
  it('accepts the owner’s signature over the body’s terms and returns the nonce', async () => {
    const nonce = hexlify(randomBytes(32));
    const cred = await signIntentMandate(owner, 31337, 'bot-1', terms, nonce);
    await expect(verifyMandateCredential(cred, terms, ctx)).resolves.toEqual({ format: 'eip712', nonce: nonce.toLowerCase() });
  });

  it('refuses a tampered message (bad_signature), another signer (signer_not_owner or bad_signature), another chain, agent, currency or terms', async () => {
    const cred = await signIntentMandate(owner, 31337, 'bot-1', terms);
    const tampered = { ...cred, message: { ...(cred.message as object), totalAmount: '200.00' } };
    expect(await reason(verifyMandateCredential(tampered, { ...terms, totalAmount: '200.00' }, ctx))).toBe('bad_signature');
    const byOther = await signIntentMandate(other, 31337, 'bot-1', terms);
    expect(await reason(verifyMandateCredential(byOther, terms, ctx))).toBe('signer_not_owner');
    expect(await reason(verifyMandateCredential({ ...byOther, signer: owner.address }, terms, ctx))).toBe('bad_signature');
    expect(await reason(verifyMandateCredential(await signIntentMandate(owner, 1, 'bot-1', terms), terms, ctx))).toBe('wrong_chain');
    expect(await reason(verifyMandateCredential(await signIntentMandate(owner, 31337, 'bot-2', terms), terms, ctx))).toBe('terms_mismatch');
    expect(await reason(verifyMandateCredential(cred, { ...terms, maxAmountPerPayment: '20.000001' }, ctx))).toBe('terms_mismatch');
    // The same value written another way is the same term; base units in the signed message are not decimal text.
    await expect(verifyMandateCredential(cred, { ...terms, maxAmountPerPayment: '20' }, ctx)).resolves.toMatchObject({ format: 'eip712' });
    const baseUnitTerms = { ...terms, maxAmountPerPayment: '20000000' };
    expect(await reason(verifyMandateCredential(await signIntentMandate(owner, 31337, 'bot-1', { ...baseUnitTerms, maxAmountPerPayment: '20000000e0' }), baseUnitTerms, ctx))).toBe('malformed');
    expect(await reason(verifyMandateCredential(cred, { ...terms, payees: ['acme'] }, ctx))).toBe('terms_mismatch');
    expect(await reason(verifyMandateCredential({ ...cred, message: { ...(cred.message as object), currency: 'EURC' } }, terms, ctx))).toBe('unsupported_currency');
    expect(await reason(verifyMandateCredential({ ...cred, types: { IntentMandate: [] } }, terms, ctx))).toBe('malformed');
    expect(await reason(verifyMandateCredential({ ...cred, signature: '0x1234' }, terms, ctx))).toBe('bad_signature');
  });

  it('refuses unknown formats', async () => {
    expect(await reason(verifyMandateCredential({ format: 'jwt', token: 'x' }, terms, ctx))).toBe('unsupported_format');
    expect(await reason(verifyMandateCredential('x', terms, ctx))).toBe('unsupported_format');
  });
});

describe('SD-JWT v0.2 open payment mandate (docs/architecture.md §14)', () => {
  it('accepts an ES256K token issued by the owner under did:pkh; the nonce is the jti', async () => {
    const token = await issueSdJwtMandate(owner.privateKey, 31337, 'bot-1', terms, { jti: 'mandate-1' });
    expect(token.split('~').length).toBeGreaterThan(2); // at least one disclosure
    await expect(verifyMandateCredential({ format: 'sd-jwt', token }, terms, ctx)).resolves.toEqual({ format: 'sd-jwt', nonce: 'mandate-1' });
  });

  it('refuses another key, a tampered payload or disclosure, wrong iss/vct/sub, unknown constraints, other currencies, mismatched terms and past expiry', async () => {
    const token = await issueSdJwtMandate(owner.privateKey, 31337, 'bot-1', terms);
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issueSdJwtMandate(other.privateKey, 31337, 'bot-1', terms) }, terms, ctx))).toBe('signer_not_owner');
    const [jwt, ...rest] = token.split('~');
    const [h, p, s] = jwt.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.constraints[2].max = '999000000';
    expect(claims.constraints[1].max).toBe('20000000'); // SD-JWT constraints state base units (AP2 v0.2)
    const forged = [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), s].join('.');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: [forged, ...rest].join('~') }, { ...terms, totalAmount: '999.00' }, ctx))).toBe('bad_signature');
    const fakeDisclosure = Buffer.from(JSON.stringify(['salt', 'description', 'something else'])).toString('base64url');
    // A disclosure the issuer never hashed into the payload (RFC 9901 §7.1), or one repeated.
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: [jwt, fakeDisclosure, ''].join('~') }, terms, ctx))).toBe('bad_signature');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: [jwt, ...rest.slice(0, -1), fakeDisclosure, ''].join('~') }, terms, ctx))).toBe('bad_signature');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: [jwt, rest[0], rest[0], ''].join('~') }, terms, ctx))).toBe('bad_signature');
    // Withholding the description disclosure leaves the signed description unknown.
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: `${jwt}~` }, terms, ctx))).toBe('terms_mismatch');
    const issue = (c: Record<string, unknown>) => issueSdJwtMandate(owner.privateKey, 31337, 'bot-1', terms, c);
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issue({ iss: `did:pkh:eip155:1:${owner.address}` }) }, terms, ctx))).toBe('wrong_chain');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issue({ iss: `did:pkh:eip155:31337:${other.address}` }) }, terms, ctx))).toBe('signer_not_owner');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issue({ vct: 'mandate.payment.1' }) }, terms, ctx))).toBe('unsupported_vct');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issue({ sub: 'bot-2' }) }, terms, ctx))).toBe('terms_mismatch');
    const constraints = [
      { type: 'payment.allowed_payees', allowed: terms.payees },
      { type: 'payment.amount_range', currency: 'USDC', max: '20000000' },
      { type: 'payment.budget', currency: 'USDC', max: '100000000' },
    ];
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issue({ constraints: [...constraints, { type: 'payment.agent_recurrence', frequency: 'daily' }] }) }, terms, ctx))).toBe('unknown_constraint');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issue({ constraints: [constraints[0], { ...constraints[1], currency: 'USD' }, constraints[2]] }) }, terms, ctx))).toBe('unsupported_currency');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token }, { ...terms, payees: ['other'] }, ctx))).toBe('terms_mismatch');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await issue({ exp: Math.floor(Date.now() / 1000) - 10 }) }, terms, ctx))).toBe('expired');
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: 'not-a-jwt' }, terms, ctx))).toBe('malformed');
  });

  it('tolerates an issuer clock up to a minute ahead (iat), not more', async () => {
    const now = Math.floor(ctx.now.getTime() / 1000);
    const ahead = (seconds: number) => issueSdJwtMandate(owner.privateKey, 31337, 'bot-1', terms, { iat: now + seconds });
    await expect(verifyMandateCredential({ format: 'sd-jwt', token: await ahead(30) }, terms, ctx)).resolves.toMatchObject({ format: 'sd-jwt' });
    expect(await reason(verifyMandateCredential({ format: 'sd-jwt', token: await ahead(600) }, terms, ctx))).toBe('bad_signature');
  });

  it('accepts integer amounts in the constraints (AP2 minor units as JSON numbers)', async () => {
    const token = await issueSdJwtMandate(owner.privateKey, 31337, 'bot-1', terms, {
      constraints: [
        { type: 'payment.allowed_payees', allowed: terms.payees },
        { type: 'payment.amount_range', currency: 'USDC', max: 20_000_000 },
        { type: 'payment.budget', currency: 'USDC', max: 100_000_000 },
      ],
    });
    await expect(verifyMandateCredential({ format: 'sd-jwt', token }, terms, ctx)).resolves.toMatchObject({ format: 'sd-jwt' });
  });
});
