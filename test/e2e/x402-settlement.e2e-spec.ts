import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import { Transaction, Wallet, hexlify, randomBytes, toBeHex } from 'ethers';
import { randomUUID } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment } from '@x402/fetch';
import { X402Faults, X402Settlements } from '../../src/modules/payments/x402-settlements.service';
import type { TestApp } from '../support/app';
import { FaultSwitch } from '../support/faults';
import { AgentStack, createAgent, createPayee, paymentRows, settleUntil, startRelayerWorker, useAgentStack } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

/** `@x402/evm`'s exact-scheme Permit2 proxy and the canonical Permit2 contract (its verify branch). */
const X402_PERMIT2_PROXY = '0x402085c248EeA27D92E8b30b2C58ed07f9E20001';
const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';

/**
 * x402 settlement outcomes on a chain that does not mine at once (docs/architecture.md §14, §18):
 * what the service verified is what it relays; "pending" is never "failed"; settle's success means mined.
 */
describe('x402 settlement on a real chain', () => {
  let t: TestApp;
  let chain: TestChain;
  let stack: AgentStack;
  const x402Faults = new FaultSwitch<'after_reserved'>();
  let base: string;
  useAgentStack(
    { overrides: [{ provide: X402Faults, useValue: x402Faults }], env: { X402_MIN_AMOUNT: '0.01', X402_RECEIPT_WAIT_MS: '3000', RELAYER_WAIT_MS: '2000' }, listen: 'named', chainTime: true },
    (s) => ({ t, chain, base } = stack = s),
  );

  const challengeUrl = (to: string, amount: string) => `${base}/api/v1/x402/challenge?to=${to}&amount=${amount}`;
  const clientFor = (payer: Wallet) => new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
  const payloadFor = async (payer: Wallet, url: string): Promise<PaymentPayload> => {
    const challenge = await fetch(url);
    return clientFor(payer).createPaymentPayload(decodePaymentRequiredHeader(challenge.headers.get('payment-required')!));
  };
  /** A fetch that pushes every PAYMENT-SIGNATURE header it sends onto `sent`. */
  const recordingInto = (sent: string[]) => async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const header = request.headers.get('payment-signature');
    if (header) sent.push(header);
    return fetch(request);
  };
  /** Pays `url` with `header` while the settle crashes right after its reservation (answer 500); returns the settlement row of `payer`. */
  const crashAfterReservation = async (url: string, header: string, payer: string): Promise<{ id: string; status: string }> => {
    x402Faults.at = 'after_reserved';
    try {
      expect((await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } })).status).toBe(500);
    } finally {
      x402Faults.at = null;
    }
    const [row] = await t.dataSource.query(`SELECT id, status FROM x402_settlements WHERE payer = $1`, [payer.toLowerCase()]);
    return row;
  };
  const encode = (payload: unknown) => Buffer.from(JSON.stringify(payload)).toString('base64');
  const relayCount = async (): Promise<number> => Number((await t.dataSource.query(`SELECT count(*)::int AS n FROM relayer_transactions WHERE purpose = 'x402'`))[0].n);

  it('finding 2: a payload carrying a Permit2 authorization beside the EIP-3009 one is refused before verification; nothing is relayed or reserved', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const url = challengeUrl(payee.handle, '1.00');
    const payload = await payloadFor(payer, url);
    const eip3009 = payload.payload as { authorization: Record<string, string>; signature: string };
    // The Permit2 part verifies on its own (signed by the payer; the proxy answers the settle simulation),
    // so a verifier that picks the Permit2 branch accepts the payload, while the EIP-3009 part is what
    // a relay of `payload.authorization` would send.
    const now = (await chain.headTimestamp()) - 5;
    const permit2Authorization = {
      from: payer.address,
      permitted: { token: chain.usdc.address, amount: '1000000' },
      spender: X402_PERMIT2_PROXY,
      nonce: BigInt(hexlify(randomBytes(16))).toString(),
      deadline: String(now + 600),
      witness: { to: payee.address, validAfter: String(now) },
    };
    const permit2Signature = await payer.signTypedData(
      { name: 'Permit2', chainId: 31337, verifyingContract: PERMIT2 },
      {
        PermitWitnessTransferFrom: [
          { name: 'permitted', type: 'TokenPermissions' },
          { name: 'spender', type: 'address' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
          { name: 'witness', type: 'Witness' },
        ],
        TokenPermissions: [
          { name: 'token', type: 'address' },
          { name: 'amount', type: 'uint256' },
        ],
        Witness: [
          { name: 'to', type: 'address' },
          { name: 'validAfter', type: 'uint256' },
        ],
      },
      permit2Authorization,
    );
    const twoKeys = { ...payload, payload: { authorization: eip3009.authorization, permit2Authorization, signature: permit2Signature } };
    const relaysBefore = await relayCount();
    const balanceBefore = await chain.usdcBalance(payee.address);
    await chain.rpc('anvil_setCode', [X402_PERMIT2_PROXY, '0x00']);
    try {
      const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': encode(twoKeys) } });
      const body = (await res.json()) as { reason: string };
      expect(res.status).toBe(402);
      expect(body.reason).toBe('invalid_payload');
      // The EIP-3009 part alone would also have to be exactly {authorization, signature}: extra keys beside it are refused too.
      const extra = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': encode({ ...payload, payload: { ...eip3009, extra: 1 } }) } });
      expect(extra.status).toBe(402);
      expect(((await extra.json()) as { reason: string }).reason).toBe('invalid_payload');
    } finally {
      await chain.rpc('anvil_setCode', [X402_PERMIT2_PROXY, '0x']);
    }
    expect(await relayCount()).toBe(relaysBefore);
    expect(await t.dataSource.query(`SELECT id FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()])).toEqual([]);
    expect(await chain.usdcBalance(payee.address)).toBe(balanceBefore);
    // The plain EIP-3009 payload of the same payer still pays.
    const ok = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': encode(payload) } });
    expect(ok.status).toBe(200);
    expect(decodePaymentResponseHeader(ok.headers.get('payment-response')!)).toMatchObject({ success: true });
    expect(await chain.usdcBalance(payee.address)).toBe(balanceBefore + USDC);
  });

  it('finding 10: POST /x402/settle says success only once the transfer is mined; with mining stopped it says submitted, and the payment succeeds exactly once when mining resumes', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
    const challenge = await fetch(challengeUrl(payee.handle, '4.00'));
    const paymentRequired = challenge.headers.get('payment-required')!;
    const key = `x402-${randomUUID()}`;
    const settle = () => t.http.post('/api/v1/x402/settle').set('X-Api-Key', agent.key).set('Idempotency-Key', key).send({ paymentRequired });
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const res = await settle();
      expect(res.status).toBe(200);
      expect(res.body.settlement.success).toBe(false);
      expect(['pending', 'submitted']).toContain(res.body.payment.status);
      const again = await settle();
      expect(again.body.payment.id).toBe(res.body.payment.id);
      expect(again.body.settlement.success).toBe(false);
      expect(await chain.usdcBalance(payee.address)).toBe(0n);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    await chain.mine();
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId)).every((p) => p.status === 'succeeded'));
    const done = await settle();
    expect(done.body.settlement).toMatchObject({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(done.body.payment).toMatchObject({ status: 'succeeded' });
    expect(await chain.usdcBalance(payee.address)).toBe(4n * USDC);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
  });

  it('a fee-bumped relay: settle sees the replacement mined (every hash the relayer signed for the payment), before the indexer settles it', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
    const challenge = await fetch(challengeUrl(payee.handle, '2.00'));
    const paymentRequired = challenge.headers.get('payment-required')!;
    const key = `x402-${randomUUID()}`;
    const settle = () => t.http.post('/api/v1/x402/settle').set('X-Api-Key', agent.key).set('Idempotency-Key', key).send({ paymentRequired });
    let bumpHash: string;
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const first = await settle();
      expect(first.body.settlement.success).toBe(false);
      expect(first.body.payment.status).toBe('submitted');
      const [row] = await paymentRows(t, agent.agentId);
      // The relayer's current transaction for the payment, once the node holds it. On a busy machine the
      // tender may already have replaced the first one (its bump clock ran out during settle's wait):
      // strand whichever is current, and expect a replacement beyond the ones counted now.
      const current = await waitFor(async () => {
        const [r] = await t.dataSource.query(`SELECT tx_hash, replacements FROM relayer_transactions WHERE reference = $1 AND purpose = 'payment'`, [row.id]);
        const tx = r?.tx_hash ? await chain.provider.getTransaction(r.tx_hash) : null;
        return tx ? { tx: Transaction.from(tx), replacements: Number(r.replacements) } : null;
      }, { label: 'the relay in the node’s pool' });
      // Stranded: the next block's base fee is above its maxFeePerGas; its bump clock is run out.
      await chain.rpc('anvil_setNextBlockBaseFeePerGas', [toBeHex(current.tx.maxFeePerGas! * 4n)]);
      await chain.mine();
      await t.dataSource.query(`UPDATE relayer_transactions SET sent_at = now() - interval '1 hour' WHERE reference = $1 AND purpose = 'payment'`, [row.id]);
      bumpHash = await waitFor(async () => {
        const [r] = await t.dataSource.query(`SELECT replacements, tx_hash FROM relayer_transactions WHERE reference = $1 AND purpose = 'payment'`, [row.id]);
        return Number(r.replacements) > current.replacements ? (r.tx_hash as string) : null;
      }, { label: 'the tender replaces the stranded relay' });
      expect(bumpHash).not.toBe(current.tx.hash);
      await chain.mine();
      expect((await chain.provider.getTransactionReceipt(bumpHash))!.status).toBe(1);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    // No indexer pass: settle's own bounded wait must find the replacement.
    const done = await settle();
    expect(done.body.settlement).toMatchObject({ success: true, transaction: bumpHash });
    expect(done.body.payment).toMatchObject({ status: 'succeeded' });
    expect(await chain.usdcBalance(payee.address)).toBe(2n * USDC);
  });

  const authorizationUses = async (payer: string) => (await chain.usdc.getAuthorizationLogs(0, await chain.headBlock(), payer)).filter((l) => l.kind === 'used');

  it('finding 1: with mining stopped a paid retry answers 402 pending (never settlement_failed), the same header answers 200 once mined, and exactly one transfer moves', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const url = challengeUrl(payee.handle, '0.40');
    const sent: string[] = [];
    const recordingFetch = recordingInto(sent);
    const payingFetch = wrapFetchWithPayment(recordingFetch as typeof fetch, clientFor(payer));
    const before = await chain.usdcBalance(payee.address);
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const first = await payingFetch(url);
      expect(first.status).toBe(402);
      expect(((await first.json()) as { reason: string }).reason).toBe('pending');
      expect(Number(first.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(sent).toHaveLength(1);
      const [row] = await t.dataSource.query(`SELECT id, status FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()]);
      expect(row.status).toBe('pending');
      const second = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
      expect(second.status).toBe(402);
      expect(((await second.json()) as { reason: string }).reason).toBe('pending');
      // The retry resumed the relay already broadcast; it did not send another.
      expect(await t.dataSource.query(`SELECT status FROM relayer_transactions WHERE reference = $1`, [row.id])).toEqual([{ status: 'broadcast' }]);
      expect(await chain.usdcBalance(payee.address)).toBe(before);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    await chain.mine();
    const paid = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
    expect(paid.status).toBe(200);
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!)).toMatchObject({ success: true, payer: payer.address });
    expect(await chain.usdcBalance(payee.address)).toBe(before + 400_000n);
    // One payment buys one response: once answered 200, the header is a replay.
    const replay = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
    expect(replay.status).toBe(402);
    expect(((await replay.json()) as { reason: string }).reason).toBe('payment_already_used');
    expect(await authorizationUses(payer.address)).toHaveLength(1);
  });

  it('finding 1: a crash right after the reservation does not leave it reserved: the sweep relays it, the indexer settles it, the same header then answers 200', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const url = challengeUrl(payee.handle, '0.50');
    const header = encode(await payloadFor(payer, url));
    const row = await crashAfterReservation(url, header, payer.address);
    expect(row.status).toBe('pending');
    expect(await t.dataSource.query(`SELECT id FROM relayer_transactions WHERE reference = $1`, [row.id])).toEqual([]);
    // The crashed request's lease runs out (its length is RELAYER_WAIT_MS + X402_RECEIPT_WAIT_MS + 10 s).
    await t.dataSource.query(`UPDATE x402_settlements SET lease_until = now() - interval '1 second' WHERE id = $1`, [row.id]);
    expect(await t.app.get(X402Settlements).sweepOnce(0)).toBeGreaterThanOrEqual(1);
    await settleUntil(t, async () => (await t.dataSource.query(`SELECT status FROM x402_settlements WHERE id = $1`, [row.id]))[0].status === 'settled', 'x402 settlement settled');
    expect(await chain.usdcBalance(payee.address)).toBe(500_000n);
    const paid = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(paid.status).toBe(200);
    expect(await authorizationUses(payer.address)).toHaveLength(1);
  });

  it('finding 1 (as seen from outside): @x402/fetch pays 0.40 while the relayer worker is stopped → 402 pending, not settlement_failed; worker back, the same header answers 200; the payee gets 0.40 once', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const url = challengeUrl(payee.handle, '0.40');
    const sent: string[] = [];
    const recordingFetch = recordingInto(sent);
    await stack.worker.close();
    try {
      const first = await wrapFetchWithPayment(recordingFetch as typeof fetch, clientFor(payer))(url);
      expect(first.status).toBe(402);
      expect(((await first.json()) as { reason: string }).reason).toBe('pending');
      expect(first.headers.get('retry-after')).toBeTruthy();
      expect((await t.dataSource.query(`SELECT status FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()]))[0].status).toBe('pending');
    } finally {
      stack.worker = await startRelayerWorker();
    }
    const paid = await waitFor(
      async () => {
        const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
        return res.status === 200 ? res : (expect(((await res.json()) as { reason: string }).reason).toBe('pending'), null);
      },
      { label: 'the same header answered 200', timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!)).toMatchObject({ success: true });
    expect(await chain.usdcBalance(payee.address)).toBe(400_000n);
    expect(await authorizationUses(payer.address)).toHaveLength(1);
  });

  it('a pending settlement whose authorization the payer cancels on chain is failed "cancelled" by the USDC authorization indexer; the same header then answers settlement_failed and nothing moved', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const submitter = await chain.wallet(); // not the relayer: its nonces are the relayer queue's
    const url = challengeUrl(payee.handle, '0.20');
    const payload = await payloadFor(payer, url);
    const header = encode(payload);
    const row = await crashAfterReservation(url, header, payer.address);
    expect(row.status).toBe('pending');
    const nonce = (payload.payload as { authorization: { nonce: string } }).authorization.nonce;
    await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: await chain.usdc.encodeCancelAuthorization(payer, nonce) }), 'cancelAuthorization');
    await settleUntil(t, async () => (await t.dataSource.query(`SELECT status FROM x402_settlements WHERE id = $1`, [row.id]))[0].status !== 'pending', 'x402 settlement decided');
    expect((await t.dataSource.query(`SELECT status, error, tx_hash FROM x402_settlements WHERE id = $1`, [row.id]))[0]).toEqual({ status: 'failed', error: 'cancelled', tx_hash: null });
    const retry = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(retry.status).toBe(402);
    expect(((await retry.json()) as { reason: string }).reason).toBe('settlement_failed');
    expect(await chain.usdcBalance(payee.address)).toBe(0n);
    expect(await authorizationUses(payer.address)).toHaveLength(0);
  });

  // Moves chain time forward: keep it last in this file.
  it('finding 1: a settlement is failed only once validBefore has passed with the authorization unused; the same header then answers settlement_failed and nothing moved', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const url = challengeUrl(payee.handle, '0.30');
    const payload = await payloadFor(payer, url);
    const header = encode(payload);
    const row = await crashAfterReservation(url, header, payer.address);
    expect(row.status).toBe('pending');
    const validBefore = Number((payload.payload as { authorization: { validBefore: string } }).authorization.validBefore);
    await chain.increaseTime(validBefore - (await chain.headTimestamp()) + 1);
    await t.dataSource.query(`UPDATE x402_settlements SET lease_until = now() - interval '1 second' WHERE id = $1`, [row.id]);
    await t.app.get(X402Settlements).sweepOnce(0);
    expect((await t.dataSource.query(`SELECT status, error FROM x402_settlements WHERE id = $1`, [row.id]))[0]).toEqual({ status: 'failed', error: 'expired' });
    const retry = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(retry.status).toBe(402);
    expect(((await retry.json()) as { reason: string }).reason).toBe('settlement_failed');
    expect(await chain.usdcBalance(payee.address)).toBe(0n);
    expect(await authorizationUses(payer.address)).toHaveLength(0);
  });
});
