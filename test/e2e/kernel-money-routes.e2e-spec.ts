import { randomUUID } from 'node:crypto';
import { escrowKeyFromId } from '@lib/chain';
import type { TestApp } from '../support/app';
import { createAgent, createPayee, createSeller, pay, useAgentStack } from '../support/agents';
import { indexUntilStatus, TestChain, USDC } from '../support/chain';

/**
 * The money routes through the kernel's one idempotency service (DESIGN §5, §17; issue 19): a
 * replay says so (`Idempotent-Replayed: true`) on every route, and same-key concurrency on an
 * agent escrow action relays once.
 */
describe('money routes under the one idempotency service', () => {
  let t: TestApp;
  let chain: TestChain;
  useAgentStack({}, (s) => ({ t, chain } = s));

  it('POST /payments: the first answer says Idempotent-Replayed: false, its replay true with the same payment; a stored refusal replays with true too', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { perTransactionMax: '5.00', dailyLimit: '100.00' } });
    const first = await pay(t, agent, { to: payee.handle, amount: '1.00' }, 'replay-1');
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBe('false');
    const again = await pay(t, agent, { to: payee.handle, amount: '1.00' }, 'replay-1');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);

    const refused = await pay(t, agent, { to: payee.handle, amount: '6.00' }, 'replay-2');
    expect(refused.status).toBe(403);
    expect(refused.headers['idempotent-replayed']).toBe('false');
    const refusedAgain = await pay(t, agent, { to: payee.handle, amount: '6.00' }, 'replay-2');
    expect(refusedAgain.status).toBe(403);
    expect(refusedAgain.headers['idempotent-replayed']).toBe('true');
    expect(refusedAgain.body).toMatchObject({ code: 'policy_denied', details: refused.body.details });
    const other = await pay(t, agent, { to: payee.handle, amount: '2.00' }, 'replay-1');
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_conflict');
  });

  it('POST /agent-escrows/{id}/release: N concurrent requests under one key relay once; the rest answer 409 in flight or the replay', async () => {
    const { handle, org } = await createSeller(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC });
    const created = await t.http
      .post('/api/v1/agent-escrows')
      .set('X-Api-Key', agent.key)
      .set('Idempotency-Key', `esc-${randomUUID()}`)
      .send({ to: handle, amount: '10.00', description: 'Concurrent release' });
    expect(created.status).toBe(200);
    expect(created.headers['idempotent-replayed']).toBe('false');
    await indexUntilStatus(t, org, created.body.checkoutSessionId, 'funded');

    const release = () =>
      t.http.post(`/api/v1/agent-escrows/${created.body.id}/release`).set('X-Api-Key', agent.key).set('Idempotency-Key', 'release-once').send({ confirm: true });
    const answers = await Promise.all(Array.from({ length: 6 }, release));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const a of answers) {
      if (a.status === 200) continue;
      expect(a.status).toBe(409);
      expect(a.body).toMatchObject({ code: 'idempotency_conflict', details: { reason: 'in_progress' } });
      expect(a.headers['retry-after']).toBe('1');
    }
    expect(ok.filter((a) => a.headers['idempotent-replayed'] === 'false')).toHaveLength(1);
    expect(new Set(ok.map((a) => a.body.txHash)).size).toBe(1);

    const relays: Array<{ n: string }> = await t.dataSource.query(
      `SELECT count(*)::text AS n FROM relayer_transactions WHERE purpose = 'agent_escrow_release' AND reference = $1`,
      [created.body.id],
    );
    expect(relays[0].n).toBe('1');
    const logs = await chain.provider.getLogs({ address: chain.gateway.escrowAddress, fromBlock: 0 });
    const escrowKey = escrowKeyFromId(created.body.checkoutSessionId).toLowerCase();
    const released = chain.gateway.decodeLogs(logs).filter((l) => l.action === 'released' && l.escrowKey.toLowerCase() === escrowKey);
    expect(released).toHaveLength(1);

    const replay = await release();
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.txHash).toBe(ok[0].body.txHash);
  });
});
