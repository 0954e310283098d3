import { createTestApp, TestApp } from '../support/app';
import { createOrg } from '../support/factories';
import { cliJson, requireBuiltCli, runCli, TestChain } from '../support/chain';

// Each CLI run boots a Nest application context.
jest.setTimeout(120_000);

/**
 * The verification commands of the operator CLI (docs/architecture.md §9, §12), run compiled:
 * `demo:verify-wallet <orgId>` pays and confirms the wallet check from the payout wallet on the
 * local chain; `verification:decide --identity approved|declined|reopen` sets the identity check.
 */
describe('operator CLI verification commands (dist/src/cli.js --json)', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    requireBuiltCli();
    t = await createTestApp();
    chain = new TestChain();
  });
  afterAll(async () => {
    chain?.close();
    await t?.close();
  });

  const status = async (key: string) => (await t.http.get('/api/v1/verification').set('X-Api-Key', key)).body;

  it('demo:verify-wallet pays the exact amount from the payout wallet (minting its shortfall) and confirms it; decide approved → verified, declined → 403 kyb_rejected, reopen restores', async () => {
    const wallet = await chain.wallet();
    const org = await createOrg(t.app, { payoutAddress: wallet.address });
    const paid = cliJson(await runCli(['demo:verify-wallet', org.organizationId, '--json'], { DEMO_SELLER_PRIVATE_KEY: wallet.privateKey }));
    expect(paid).toMatchObject({ txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), wallet: 'verified', status: 'pending' });
    expect((await status(org.key)).wallet).toMatchObject({ status: 'verified', txHash: paid.txHash, amount: paid.amount });

    expect(cliJson(await runCli(['verification:decide', '--org', org.organizationId, '--identity', 'approved', '--json']))).toMatchObject({ status: 'verified' });
    expect((await t.http.get('/api/v1/me').set('X-Api-Key', org.key)).body.verification).toEqual({ status: 'verified' });

    expect(cliJson(await runCli(['verification:decide', '--org', org.organizationId, '--identity', 'declined', '--json']))).toMatchObject({ status: 'rejected' });
    const blocked = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1.00', description: 'x' });
    expect([blocked.status, blocked.body.code]).toEqual([403, 'kyb_rejected']);

    expect(cliJson(await runCli(['verification:decide', '--org', org.organizationId, '--identity', 'reopen', '--json']))).toMatchObject({ status: 'pending', identity: { status: 'unverified' } });
    expect((await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1.00', description: 'x' })).status).toBe(200);
  });

  it('refuses a bad decision, and a payout address it has no key for', async () => {
    const org = await createOrg(t.app, { payoutAddress: (await chain.wallet({ eth: false })).address });
    const bad = await runCli(['verification:decide', '--org', org.organizationId, '--identity', 'maybe', '--json']);
    expect(bad.code).toBe(2);
    expect(cliJson(bad).error).toMatch(/--identity must be one of approved, declined, reopen/);
    const nokey = await runCli(['demo:verify-wallet', org.organizationId, '--json']);
    expect(nokey.code).toBe(2);
    expect(cliJson(nokey).error).toMatch(/no local key for the payout address/);
  });
});
