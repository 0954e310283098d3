import { TestUSDCArtifact } from '@lib/contracts';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Wallet } from 'ethers';
import { Webhook } from 'standardwebhooks';
import { parseAmount } from '@lib/money';
import { AppConfig } from '../../src/config/app-config';
import { VerificationService } from '../../src/modules/verification/verification.service';
import { createTestApp, TestApp } from '../support/app';
import { countIdempotencyRecords, expectError } from '../support/errors';
import { createOrg, TestOrg } from '../support/factories';
import { TestChain, USDC } from '../support/chain';

jest.setTimeout(90_000);

interface Party {
  org: TestOrg;
  wallet: Wallet;
}

/**
 * Business verification end to end on anvil (docs/architecture.md §12): the wallet check verified
 * from the USDC Transfer log, the sandbox identity provider through its page and its signed
 * callback, `verified` only when both pass, and `rejected` blocking every gated write with 403
 * kyb_rejected until the operator reopens it.
 */
describe('verification (KYB)', () => {
  let t: TestApp;
  let chain: TestChain;
  let payTo: string;
  let sandboxSecret: string;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    payTo = t.app.get(AppConfig).env.VERIFICATION_ADDRESS;
    sandboxSecret = t.app.get(AppConfig).env.IDENTITY_SANDBOX_WEBHOOK_SECRET;
  });
  afterAll(async () => {
    chain?.close();
    await t?.close();
  });

  async function party(wallet?: Wallet): Promise<Party> {
    const w = wallet ?? (await chain.wallet({ usdc: 20n * USDC }));
    return { wallet: w, org: await createOrg(t.app, { payoutAddress: w.address }) };
  }
  const get = (p: Party, path = '') => t.http.get(`/api/v1/verification${path}`).set('X-Api-Key', p.org.key);
  const checkout = (p: Party) => t.http.post('/api/v1/verification/checkout').set('X-Api-Key', p.org.key).send({});
  const confirm = (p: Party, txHash: string, key: string | null = randomUUID()) => {
    const req = t.http.post('/api/v1/verification/confirm').set('X-Api-Key', p.org.key);
    if (key) req.set('Idempotency-Key', key);
    return req.send({ txHash });
  };
  const start = (p: Party) => t.http.post('/api/v1/verification/start').set('X-Api-Key', p.org.key).send({});
  const me = async (p: Party) => (await t.http.get('/api/v1/me').set('X-Api-Key', p.org.key)).body.verification.status as string;
  async function issued(p: Party): Promise<{ amount: bigint; body: Record<string, unknown> }> {
    const res = await checkout(p);
    expect(res.status).toBe(200);
    return { amount: parseAmount(res.body.amount), body: res.body };
  }
  const pay = (from: Wallet, to: string, amount: bigint) => chain.usdcTransfer(from, to, amount);
  const sandboxToken = (url: string) => new URL(url).pathname.split('/').pop()!;
  async function answer(url: string, outcome: string) {
    return t.http.post(`/verify/${sandboxToken(url)}`).type('form').send({ outcome });
  }
  async function verifyWallet(p: Party) {
    const { amount } = await issued(p);
    const res = await confirm(p, await pay(p.wallet, payTo, amount));
    expect(res.status).toBe(200);
    return res;
  }

  describe('wallet check', () => {
    it('happy path: an exact micro-unit amount from the payout address, the same one while open, verified from the Transfer log; a replay and a re-confirm return it', async () => {
      const p = await party();
      expect((await get(p)).body).toMatchObject({ status: 'unverified', wallet: { status: 'unverified' }, identity: { status: 'unverified' } });
      const first = await issued(p);
      expect(first.body).toMatchObject({ status: 'pending', address: p.wallet.address, payTo, chainId: 31337 });
      expect(first.amount >= 1_000_000n && first.amount <= 1_999_999n).toBe(true);
      expect(new Date(first.body.expiresAt as string).getTime() - new Date(first.body.createdAt as string).getTime()).toBe(90 * 60 * 1000);
      expect((await issued(p)).body).toEqual(first.body);
      expect(await me(p)).toBe('pending');

      const txHash = await pay(p.wallet, payTo, first.amount);
      const key = randomUUID();
      const ok = await confirm(p, txHash, key);
      expect(ok.status).toBe(200);
      expect(ok.headers['idempotent-replayed']).toBe('false');
      expect(ok.body).toMatchObject({ status: 'pending', wallet: { status: 'verified', txHash: txHash.toLowerCase() }, identity: { status: 'unverified' } });
      const replay = await confirm(p, txHash, key);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(ok.text);
      const again = await confirm(p, txHash);
      expect(again.status).toBe(200);
      expect(again.body.wallet).toEqual(ok.body.wallet);
      const rows = await t.dataSource.query('SELECT organization_id, amount FROM verification_wallet_payments WHERE tx_hash = $1', [txHash.toLowerCase()]);
      expect(rows).toEqual([{ organization_id: p.org.organizationId, amount: first.amount.toString() }]);
      expectError(await checkout(p), 409, 'invalid_request');
    });

    it('concurrent twins of checkout issue one check', async () => {
      const p = await party();
      const results = await Promise.all(Array.from({ length: 6 }, () => checkout(p)));
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
      expect(new Set(results.map((r) => `${r.body.amount}|${r.body.createdAt}`)).size).toBe(1);
    });

    it.each([
      ['wrong_sender', async (p: Party, amount: bigint) => pay(await chain.wallet({ usdc: 5n * USDC }), payTo, amount)],
      ['wrong_amount', async (p: Party, amount: bigint) => pay(p.wallet, payTo, amount + 1n)],
      ['wrong_recipient', async (p: Party, amount: bigint) => pay(p.wallet, Wallet.createRandom().address, amount)],
      ['no_transfer', async (p: Party) => (await p.wallet.sendTransaction({ to: Wallet.createRandom().address, value: 1n })).hash],
    ])('%s → 400 with details.reason, not recorded (a retry runs again), nothing verified', async (reason, send) => {
      const p = await party();
      const { amount } = await issued(p);
      const txHash = await send(p, amount);
      await chain.provider.waitForTransaction(txHash);
      const records = await countIdempotencyRecords(t.dataSource, p.org.organizationId);
      const res = await confirm(p, txHash);
      expect(expectError(res, 400, 'invalid_request')).toMatchObject({ reason, txHash: txHash.toLowerCase() });
      expect(await countIdempotencyRecords(t.dataSource, p.org.organizationId)).toBe(records);
      expect((await get(p)).body.wallet.status).toBe('pending');
    });

    it('too late (mined after the 90-minute window, chain clock) and too early (mined before the check was issued) → 400', async () => {
      const late = await party();
      const { amount } = await issued(late);
      await chain.increaseTime(90 * 60 + 1);
      expect(expectError(await confirm(late, await pay(late.wallet, payTo, amount)), 400, 'invalid_request')).toMatchObject({ reason: 'too_late' });

      const early = await party();
      const before = await pay(early.wallet, payTo, 1_234_567n);
      await issued(early);
      // Give the check the amount already paid, so only the timing is wrong.
      await t.dataSource.query('UPDATE organization_verifications SET wallet_amount = 1234567 WHERE organization_id = $1', [early.org.organizationId]);
      expect(expectError(await confirm(early, before), 400, 'invalid_request')).toMatchObject({ reason: 'too_early' });
    });

    it('a transfer verifies one organisation only: two organisations sharing a payout address race to confirm it, exactly one wins, the other gets tx_already_used', async () => {
      for (let round = 0; round < 3; round++) {
        const a = await party();
        const b = await party(a.wallet);
        const { amount } = await issued(a);
        await issued(b);
        await t.dataSource.query('UPDATE organization_verifications SET wallet_amount = $2 WHERE organization_id = $1', [b.org.organizationId, amount.toString()]);
        const txHash = await pay(a.wallet, payTo, amount);
        const [ra, rb] = await Promise.all([confirm(a, txHash), confirm(b, txHash)]);
        const statuses = [ra.status, rb.status].sort();
        expect(statuses).toEqual([200, 400]);
        const loser = ra.status === 400 ? ra : rb;
        expect(expectError(loser, 400, 'invalid_request')).toMatchObject({ reason: 'tx_already_used' });
        const rows = await t.dataSource.query('SELECT count(*)::int AS n FROM verification_wallet_payments WHERE tx_hash = $1', [txHash.toLowerCase()]);
        expect(rows[0].n).toBe(1);
      }
    });

    it('unmined → 409 pending, not stored; the same key confirms once it is mined', async () => {
      const p = await party();
      const { amount } = await issued(p);
      const key = randomUUID();
      const records = await countIdempotencyRecords(t.dataSource, p.org.organizationId);
      await chain.rpc('evm_setAutomine', [false]);
      let txHash: string;
      try {
        const { Interface } = await import('ethers');
        const tx = await p.wallet.sendTransaction({
          to: chain.usdc.address,
          data: new Interface(TestUSDCArtifact.abi).encodeFunctionData('transfer', [payTo, amount]),
          gasLimit: 100_000n,
        });
        txHash = tx.hash;
        expect(expectError(await confirm(p, txHash, key), 409, 'invalid_request')).toMatchObject({ reason: 'pending' });
        expect(await countIdempotencyRecords(t.dataSource, p.org.organizationId)).toBe(records);
        await chain.rpc('evm_mine');
      } finally {
        await chain.rpc('evm_setAutomine', [true]);
      }
      const mined = await confirm(p, txHash, key);
      expect(mined.status).toBe(200);
      expect(mined.headers['idempotent-replayed']).toBe('false');
      expect(mined.body.wallet.status).toBe('verified');
    });

    it('refusals before the chain: no Idempotency-Key → 400; no check issued → 409; no payout address → 409; an unknown hash → 400 not_found', async () => {
      const p = await party();
      expectError(await confirm(p, `0x${'ab'.repeat(32)}`, null), 400, 'idempotency_required');
      expect(expectError(await confirm(p, `0x${'ab'.repeat(32)}`), 409, 'invalid_request')).toMatchObject({ reason: 'invalid_state', status: 'unverified' });
      await issued(p);
      expect(expectError(await confirm(p, `0x${'ab'.repeat(32)}`), 400, 'invalid_request')).toMatchObject({ reason: 'not_found' });
      const bare = { wallet: Wallet.createRandom() as unknown as Wallet, org: await createOrg(t.app) };
      expect(expectError(await checkout(bare), 409, 'invalid_request')).toMatchObject({ reason: 'no_payout_address' });
    });

    it('changing the payout address resets the wallet check', async () => {
      const p = await party();
      await verifyWallet(p);
      expect((await get(p)).body.wallet.status).toBe('verified');
      await t.dataSource.query('UPDATE organizations SET payout_address = $2 WHERE id = $1', [p.org.organizationId, Wallet.createRandom().address]);
      const after = (await get(p)).body;
      expect(after.wallet).toMatchObject({ status: 'unverified', txHash: null, amount: null });
      expect(after.status).toBe('unverified');
      expect((await checkout(p)).body.status).toBe('pending');
    });
  });

  describe('identity check (sandbox provider)', () => {
    it('start → the page on the checkout host → complete: the identity check passes through the signed callback', async () => {
      const p = await party();
      const res = await start(p);
      expect(res.status).toBe(200);
      expect(res.body.verificationUrl).toMatch(/^https:\/\/pay\.test\/verify\/vsb_/);
      const page = await t.http.get(`/verify/${sandboxToken(res.body.verificationUrl)}`);
      expect(page.status).toBe(200);
      expect(page.headers['content-security-policy']).toContain("default-src 'none'");
      expect(page.text).toContain('Complete verification');
      expect((await get(p)).body.identity).toMatchObject({ provider: 'sandbox', status: 'pending', verificationUrl: res.body.verificationUrl });
      const posted = await answer(res.body.verificationUrl, 'verified');
      expect(posted.status).toBe(303);
      expect((await get(p)).body.identity).toMatchObject({ status: 'verified', lastError: null });
      expect((await t.http.get(`/verify/${sandboxToken(res.body.verificationUrl)}`)).text).toContain('Identity verified');
      expectError(await start(p), 409, 'invalid_request');
    });

    it('fail → pending with lastError; a new start gives a new URL and the old session is dead', async () => {
      const p = await party();
      const first = (await start(p)).body.verificationUrl as string;
      await answer(first, 'requires_input');
      expect((await get(p)).body.identity).toMatchObject({ status: 'pending', lastError: 'sandbox: the person failed the check' });
      const second = (await start(p)).body.verificationUrl as string;
      expect(second).not.toBe(first);
      expect((await t.http.get(`/verify/${sandboxToken(first)}`)).status).toBe(404);
      expect((await answer(first, 'verified')).status).toBe(404);
      expect((await get(p)).body.identity.status).toBe('pending');
    });

    it('the callback endpoint: a bad signature → 400 and no change; a replayed, out-of-order report after the decision is ignored; another provider → 404', async () => {
      const p = await party();
      const url = (await start(p)).body.verificationUrl as string;
      const reference = sandboxToken(url);
      const body = (status: string) => JSON.stringify({ type: 'identity.session.updated', data: { reference, status, lastError: null } });
      const send = (payload: string, secret = sandboxSecret) => {
        const id = `msg_${randomUUID()}`;
        const at = new Date();
        return t.http
          .post('/api/v1/verification/providers/sandbox/webhook')
          .set('Content-Type', 'application/json')
          .set('webhook-id', id)
          .set('webhook-timestamp', String(Math.floor(at.getTime() / 1000)))
          .set('webhook-signature', new Webhook(secret).sign(id, at, payload))
          .send(payload);
      };
      const forged = await send(body('verified'), `whsec_${Buffer.from('not-the-sandbox-secret').toString('base64')}`);
      expect(expectError(forged, 400, 'invalid_request')).toMatchObject({ reason: 'bad_signature' });
      expect((await get(p)).body.identity.status).toBe('pending');
      const ok = await send(body('verified'));
      expect(ok.body).toEqual({ received: true, applied: true });
      const late = await send(body('requires_input'));
      expect(late.body).toEqual({ received: true, applied: false });
      expect((await get(p)).body.identity.status).toBe('verified');
      expect((await t.http.post('/api/v1/verification/providers/stripe/webhook').send({})).status).toBe(404);
    });
  });

  describe('overall status and kyb_rejected', () => {
    it('verified only when both checks pass, and GET /me shows it', async () => {
      const p = await party();
      await answer((await start(p)).body.verificationUrl, 'verified');
      expect((await get(p)).body.status).toBe('pending');
      expect(await me(p)).toBe('pending');
      await verifyWallet(p);
      expect((await get(p)).body.status).toBe('verified');
      expect(await me(p)).toBe('verified');
    });

    it('rejected blocks checkout create and every verification write with 403 kyb_rejected, GET /me shows it; the operator reopens', async () => {
      const p = await party();
      const { amount } = await issued(p);
      const txHash = await pay(p.wallet, payTo, amount);
      await answer((await start(p)).body.verificationUrl, 'declined');
      expect((await get(p)).body).toMatchObject({ status: 'rejected', identity: { status: 'rejected' } });
      expect(await me(p)).toBe('rejected');
      const create = () => t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', p.org.key).send({ amount: '5.00', description: 'Blocked order' });
      expectError(await create(), 403, 'kyb_rejected');
      // The gate runs inside the idempotent INSERT, so the refusal is recorded under its key.
      const keyed = () => create().set('Idempotency-Key', 'kyb-gate-key');
      expectError(await keyed(), 403, 'kyb_rejected');
      expectError(await checkout(p), 403, 'kyb_rejected');
      expectError(await confirm(p, txHash), 403, 'kyb_rejected');
      expectError(await start(p), 403, 'kyb_rejected');
      const sessions = await t.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1', [p.org.organizationId]);
      expect(sessions[0].n).toBe(0);

      await t.app.get(VerificationService).decide(p.org.organizationId, 'reopen');
      expect((await get(p)).body.identity).toMatchObject({ status: 'unverified', reference: null });
      expect((await create()).status).toBe(200);
      const replayed = await keyed();
      expectError(replayed, 403, 'kyb_rejected');
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      const after = await t.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1', [p.org.organizationId]);
      expect(after[0].n).toBe(1);
      const confirmed = await confirm(p, txHash);
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.status).toBe('pending');
      await t.app.get(VerificationService).decide(p.org.organizationId, 'approved');
      expect(await me(p)).toBe('verified');
      await t.app.get(VerificationService).decide(p.org.organizationId, 'declined');
      expectError(await create(), 403, 'kyb_rejected');
    });
  });

  it('the api refuses to start with IDENTITY_PROVIDER=sandbox outside the local chain (and starts its config with stripe there)', async () => {
    const main = join(__dirname, '..', '..', 'dist', 'src', 'main.js');
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(process.execPath, [main], { env: { ...process.env, PORT: '1', ...env }, encoding: 'utf8', timeout: 30_000 }, (err, _out, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr }),
        );
      });
    const refused = await run({ CHAIN_ID: '8453', VERIFICATION_ADDRESS: Wallet.createRandom().address, IDENTITY_PROVIDER: 'sandbox' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/IDENTITY_PROVIDER="sandbox": lets a person approve themselves: local chain only/);
    expect(() =>
      new AppConfig({ CHAIN_ID: '8453', VERIFICATION_ADDRESS: Wallet.createRandom().address, IDENTITY_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' }),
    ).not.toThrow();
  });
});
