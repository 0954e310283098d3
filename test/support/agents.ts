import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Logger } from 'nestjs-pino';
import { PROCESS_SECRETS } from '../../src/config/secrets';
import { CoreModule } from '../../src/core.module';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { AgentsService, PolicyInput } from '../../src/modules/agents/agents.service';
import { OrgsService } from '../../src/modules/orgs/orgs.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { RelayerWorkerModule } from '../../src/chain/relayer/relayer.worker.module';
import { PaymentRelayCheckModule } from '../../src/modules/payments/authorization-relay-check';
import { RefundRelayCheckModule } from '../../src/modules/refunds/refund-relay-check';
import { createTestApp, createTestAppWith, type ProviderOverride, type TestApp } from './app';
import { runAtChainTime, TestChain, USDC } from './chain';
import { createOrg, type TestOrg } from './factories';
import { freePort } from './processes';

// The relay intent checks of the domains whose relays the tests send (issue 29 finding 3), as the worker holds them.
@Module({ imports: [CoreModule.forProcess({ name: 'worker', secrets: PROCESS_SECRETS.worker }), RelayerWorkerModule, PaymentRelayCheckModule, RefundRelayCheckModule] })
class RelayerOnlyWorkerModule {}

/**
 * The relayer queue's processor in this process (the worker's RelayerWorkerModule on the run's
 * database and Redis prefix), so api calls that relay get their transactions broadcast.
 */
export async function startRelayerWorker(overrides: ProviderOverride[] = []): Promise<INestApplicationContext> {
  let app: INestApplicationContext;
  if (overrides.length === 0) {
    app = await NestFactory.createApplicationContext(RelayerOnlyWorkerModule, { bufferLogs: true });
  } else {
    let builder = Test.createTestingModule({ imports: [RelayerOnlyWorkerModule] });
    for (const o of overrides) builder = builder.overrideProvider(o.provide).useValue(o.useValue);
    app = (await builder.compile()).createNestApplication({ bufferLogs: true });
  }
  app.useLogger(app.get(Logger));
  await app.init();
  return app;
}

/** The api test app, a chain client and a relayer worker in this process: what the agent payment suites start with. */
export interface AgentStack {
  t: TestApp;
  chain: TestChain;
  /** The relayer worker; a test that replaces it sets the new one here, so {@link close} closes that one. */
  worker: INestApplicationContext;
  /** With `listen`: the api's base URL (`http://127.0.0.1:<port>`). */
  base: string;
  /** Gives Date.now() back (with `chainTime`), closes the worker, the app and the chain client (each only if started). */
  close(): Promise<void>;
}

/** How {@link startAgentStack} builds the app. */
export interface AgentStackOptions {
  /** Environment overrides for the app. */
  env?: Record<string, string>;
  /** Providers replaced in the app (createTestAppWith; without them createTestApp). */
  overrides?: ProviderOverride[];
  /**
   * Listen on 127.0.0.1: `named`, on a free port whose URL is also API_BASE_URL (for clients that
   * follow the absolute URLs the api names, as x402's); `any`, on any port, API_BASE_URL untouched.
   */
  listen?: 'named' | 'any';
  /** Run this process's Date.now() at the chain's time ({@link runAtChainTime}). */
  chainTime?: boolean;
}

/** Starts an {@link AgentStack}: the test app, a {@link TestChain} and {@link startRelayerWorker}. */
export async function startAgentStack(options: AgentStackOptions = {}): Promise<AgentStack> {
  const port = options.listen === 'named' ? await freePort() : 0;
  const env = options.listen === 'named' ? { ...options.env, API_BASE_URL: `http://127.0.0.1:${port}` } : (options.env ?? {});
  let restoreClock = () => {};
  const stack = { base: '', t: options.overrides ? await createTestAppWith(options.overrides, env) : await createTestApp(env), chain: new TestChain() } as AgentStack;
  stack.close = async () => {
    restoreClock();
    await stack.worker?.close();
    await stack.t?.close();
    stack.chain?.close();
  };
  if (options.listen) {
    await stack.t.app.listen(port, '127.0.0.1');
    stack.base = `http://127.0.0.1:${(stack.t.app.getHttpServer().address() as AddressInfo).port}`;
  }
  stack.worker = await startRelayerWorker();
  if (options.chainTime) restoreClock = await runAtChainTime(stack.chain);
  return stack;
}

/**
 * Starts an {@link AgentStack} in the calling `describe`'s `beforeAll` and hands it to `take` (to
 * assign the suite's variables), and closes it in its `afterAll`.
 */
export function useAgentStack(options: AgentStackOptions, take: (stack: AgentStack) => void): void {
  let stack: AgentStack | undefined;
  beforeAll(async () => {
    stack = await startAgentStack(options);
    take(stack);
  });
  afterAll(() => stack?.close());
}

/** A seller organisation (handle `seller-…`) whose payout address is a fresh wallet with ETH, for agent escrows. */
export async function createSeller(t: TestApp, chain: TestChain): Promise<{ wallet: Awaited<ReturnType<TestChain['wallet']>>; handle: string; org: TestOrg }> {
  const wallet = await chain.wallet();
  const handle = `seller-${randomUUID().slice(0, 8)}`;
  const org = await createOrg(t.app, { payoutAddress: wallet.address, handle });
  return { wallet, handle, org };
}

/** A payee organisation with a fresh payout wallet. */
export async function createPayee(t: TestApp, chain: TestChain, handle = `shop-${randomUUID().slice(0, 8)}`) {
  const wallet = await chain.wallet({ eth: false });
  const org = await (t.app.get(TransactionHost) as TxHost).withTransaction(() =>
    t.app.get(OrgsService).createOrganization({ name: 'Payee', handle, payoutAddress: wallet.address }),
  );
  return { handle: org.handle, address: wallet.address, organizationId: org.id };
}

export interface TestAgent {
  agentId: string;
  slug: string;
  organizationId: string;
  key: string;
  signerAddress: string;
  owner: Awaited<ReturnType<TestChain['wallet']>>;
}

/**
 * An organisation with an agent (owner = a fresh wallet holding `ownerUsdc`), an agent key with every
 * agent scope, the policy `policy` (none when null), the signer enabled unless `enable: false`, and
 * `float` base units moved from the owner into the signer.
 */
export async function createAgent(
  t: TestApp,
  chain: TestChain,
  opts: { policy?: PolicyInput | null; float?: bigint; enable?: boolean; ownerUsdc?: bigint; scopes?: string[] } = {},
): Promise<TestAgent> {
  const owner = await chain.wallet({ usdc: opts.ownerUsdc ?? 10_000n * USDC });
  const orgs = t.app.get(OrgsService);
  const agents = t.app.get(AgentsService);
  const org = await (t.app.get(TransactionHost) as TxHost).withTransaction(() =>
    orgs.createOrganization({ name: 'Agent Org', handle: `aorg-${randomUUID().slice(0, 8)}` }),
  );
  const slug = `agent-${randomUUID().slice(0, 8)}`;
  const agent = await agents.create({ organizationId: org.id, slug, ownerAddress: owner.address, name: 'Test agent' });
  const { secret } = await (t.app.get(TransactionHost) as TxHost).withTransaction(() =>
    orgs.createApiKey({ organizationId: org.id, kind: 'agent', agentId: agent.id, scopes: opts.scopes ?? ['agent:pay', 'agent:balance:read', 'agent:escrow:fund'] }),
  );
  if (opts.policy !== null) await agents.setPolicy(agent.id, opts.policy ?? { dailyLimit: '1000.00' });
  if (opts.enable !== false) await agents.setSignerEnabled(agent.id, true);
  const float = opts.float ?? 0n;
  if (float > 0n) await chain.usdc.transfer(owner, agent.signerAddress!, float);
  return { agentId: agent.id, slug, organizationId: org.id, key: secret, signerAddress: agent.signerAddress!, owner };
}

/** POST /api/v1/payments as the agent. */
export function pay(t: TestApp, agent: TestAgent, body: Record<string, unknown>, key: string | null = `pay-${randomUUID()}`) {
  const req = t.http.post('/api/v1/payments').set('X-Api-Key', agent.key);
  if (key !== null) req.set('Idempotency-Key', key);
  return req.send(body);
}

/** Runs the USDC authorization indexer until `done()` holds. */
export async function settleUntil(t: TestApp, done: () => Promise<boolean>, label = 'payments settled', passes = 50): Promise<void> {
  const settlement = t.app.get(PaymentSettlement);
  for (let i = 0; i < passes; i++) {
    await settlement.pollOnce();
    if (await done()) return;
  }
  throw new Error(`${label}: not reached after ${passes} indexer passes`);
}

/** Statuses of an agent's payments straight from Postgres. */
export async function paymentRows(t: TestApp, agentId: string): Promise<Array<{ id: string; status: string; amount: string; auth_nonce: string | null; relay_tx_hashes: string[]; tx_hash: string | null; failure_reason: string | null }>> {
  return t.dataSource.query(
    `SELECT id, status, amount::text, auth_nonce, relay_tx_hashes, tx_hash, failure_reason FROM payments WHERE agent_id = $1 ORDER BY created_at, id`,
    [agentId],
  );
}
