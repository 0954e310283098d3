import { randomUUID } from 'node:crypto';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import type { INestApplicationContext } from '@nestjs/common';
import { createTestApp, TestApp } from '../support/app';
import { startRelayerWorker } from '../support/agents';
import { cliJson, requireBuiltCli, runCli, TestChain, USDC } from '../support/chain';

jest.setTimeout(180_000);

/** The agent commands of the operator CLI (docs/api.md; docs/architecture.md §9), run compiled. */
describe('agent CLI (dist/src/cli.js --json)', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  const owner = new Wallet(anvilKey('demoBuyer'));

  beforeAll(async () => {
    requireBuiltCli();
    t = await createTestApp();
    chain = new TestChain();
    // The CLI relays the sweep through the relayer queue; the worker's processor runs here.
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  async function ok(...args: string[]) {
    const run = await runCli([...args, '--json']);
    expect({ code: run.code, stderr: run.code === 0 ? '' : run.stderr }).toEqual({ code: 0, stderr: '' });
    return cliJson(run);
  }
  const me = (key: string) => t.http.get('/api/v1/agent').set('X-Api-Key', key);

  it('agent:create → key → agent:policy:set (every flag, then none) → pause/resume → signer enable → fund → signer disable sweeps to the owner', async () => {
    const handle = `cli-${randomUUID().slice(0, 8)}`;
    const org = await ok('org:create', '--name', 'CLI agents', '--handle', handle);
    const agent = await ok('agent:create', '--org', org.id as string, '--slug', `bot-${handle}`, '--owner-address', owner.address);
    expect(agent).toEqual({ id: expect.any(String), slug: `bot-${handle}` });
    const agentId = agent.id as string;
    const key = (await ok('key:create', '--org', org.id as string, '--type', 'agent', '--agent', agentId, '--scopes', 'agent:pay,agent:balance:read')).key as string;

    const view0 = (await me(key)).body;
    expect(view0).toMatchObject({ paused: false, policy: null, signer: { enabled: false, address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/) } });
    const signer = view0.signer.address as string;

    const set = await ok(
      'agent:policy:set', '--agent', agentId,
      '--per-transaction-max', '25', '--daily-limit', '100.00', '--monthly-limit', '1000', '--approval-threshold', '50.5',
      '--allowed-recipients', `${handle},0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc`, '--mode', 'autonomous',
      '--valid-from', '2026-01-01T00:00:00Z', '--expires-at', '2099-12-31T23:59:59Z',
    );
    const policy = {
      perTransactionMax: '25.00',
      dailyLimit: '100.00',
      monthlyLimit: '1000.00',
      approvalThreshold: '50.50',
      allowedRecipients: [handle, '0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc'],
      mode: 'autonomous',
      validFrom: '2026-01-01T00:00:00.000Z',
      expiresAt: '2099-12-31T23:59:59.000Z',
    };
    expect(set.policy).toEqual(policy);
    expect((await me(key)).body.policy).toEqual(policy);
    const cleared = await ok('agent:policy:set', '--agent', agentId, '--daily-limit', '10');
    expect(cleared.policy).toEqual({ perTransactionMax: null, dailyLimit: '10.00', monthlyLimit: null, approvalThreshold: null, allowedRecipients: [], mode: 'autonomous', validFrom: null, expiresAt: null });

    const bad = await runCli(['agent:policy:set', '--agent', agentId, '--daily-limit', '1.1234567', '--json']);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toContain('dailyLimit');
    expect((await me(key)).body.policy.dailyLimit).toBe('10.00');

    expect((await ok('agent:pause', '--agent', agentId)).paused).toBe(true);
    expect((await me(key)).body.paused).toBe(true);
    expect((await ok('agent:resume', '--agent', agentId)).paused).toBe(false);

    const enabled = await ok('agent:signer:enable', '--agent', agentId);
    expect(enabled.agent).toMatchObject({ signer: { enabled: true, address: signer } });

    const owner0 = await chain.usdcBalance(owner.address);
    const funded = await ok('agent:fund', '--agent', agentId, '--amount', '200.00');
    expect(funded).toMatchObject({ signerAddress: signer, balance: '200.00', owner: owner.address });
    expect(await chain.usdcBalance(signer)).toBe(200n * USDC);
    const balance = await t.http.get('/api/v1/balance').set('X-Api-Key', key);
    expect(balance.body).toMatchObject({ address: signer, balance: '200.00', onChainBalance: '200.00', ownerAddress: owner.address });

    const disabled = await ok('agent:signer:disable', '--agent', agentId);
    expect(disabled).toMatchObject({ agent: { signer: { enabled: false } }, sweepTxHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await chain.usdcBalance(signer)).toBe(0n);
    expect(await chain.usdcBalance(owner.address)).toBe(owner0);
  });

  it('agent:fund refuses to fill the signer beyond SIGNER_FLOAT_MAX', async () => {
    const handle = `cli-${randomUUID().slice(0, 8)}`;
    const org = await ok('org:create', '--name', 'CLI agents', '--handle', handle);
    const agent = await ok('agent:create', '--org', org.id as string, '--slug', `bot-${handle}`, '--owner-address', owner.address);
    const run = await runCli(['agent:fund', '--agent', agent.id as string, '--amount', '150.00', '--json'], { SIGNER_FLOAT_MAX: '100' });
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toContain('SIGNER_FLOAT_MAX');
  });
});
