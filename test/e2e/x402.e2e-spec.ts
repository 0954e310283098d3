import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader, encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as FacilitatorExactEvmScheme } from '@x402/evm/exact/facilitator';
import { wrapFetchWithPayment } from '@x402/fetch';
import { Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import { PaymentsService } from '../../src/modules/payments/payments.service';
import { ethersVerifySigner } from '../../src/transports/x402/evm-facilitator-signer';
import type { TestApp } from '../support/app';
import { createAgent, createPayee, useAgentStack } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';

jest.setTimeout(120_000);

/**
 * x402 (docs/architecture.md §14), proven with the official client: `@x402/fetch` pays our challenge
 * end to end on anvil; a replayed payment header is refused; an agent's settle of another server's
 * challenge yields a header the `@x402/evm` facilitator verification accepts.
 */
describe('x402', () => {
  let t: TestApp;
  let chain: TestChain;
  let base: string;
  useAgentStack({ env: { X402_MIN_AMOUNT: '0.01' }, listen: 'named', chainTime: true }, (s) => ({ t, chain, base } = s));

  const challengeUrl = (to: string, amount: string) => `${base}/api/v1/x402/challenge?to=${to}&amount=${amount}`;

  it('a challenge answers 402 with PAYMENT-REQUIRED (v2) and the v1 body: our network, USDC, payTo and the token’s EIP-712 domain', async () => {
    const payee = await createPayee(t, chain);
    const res = await fetch(challengeUrl(payee.handle, '0.25'));
    expect(res.status).toBe(402);
    const v2 = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(v2).toMatchObject({ x402Version: 2, accepts: [{ scheme: 'exact', network: 'eip155:31337', amount: '250000', payTo: payee.address, asset: chain.usdc.address, extra: { name: expect.any(String), version: expect.any(String) } }] });
    const domain = await chain.usdc.eip712Domain();
    expect(v2.accepts[0].extra).toEqual({ name: domain.name, version: domain.version });
    const v1 = (await res.json()) as { x402Version: number; accepts: Array<Record<string, unknown>> };
    expect(v1).toMatchObject({ x402Version: 1, accepts: [{ scheme: 'exact', network: 'eip155:31337', maxAmountRequired: '250000', payTo: payee.address, resource: challengeUrl(payee.handle, '0.25') }] });
    expectError(await t.http.get('/api/v1/x402/challenge').query({ to: payee.handle, amount: '0.001' }), 400, 'invalid_request');
    expectError(await t.http.get('/api/v1/x402/challenge').query({ to: 'nobody-here', amount: '1.00' }), 400, 'invalid_request');
    expectError(await t.http.get('/api/v1/x402/challenge').query({ amount: '1.00' }), 400, 'invalid_request'); // no X402_DEFAULT_PAY_TO here
  });

  it('@x402/fetch pays our challenge: 200, PAYMENT-RESPONSE decodes, the payee gets exactly the amount; a replayed header is refused and moves nothing', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const sent: string[] = [];
    const recordingFetch = async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      const header = request.headers.get('payment-signature');
      if (header) sent.push(header);
      return fetch(request);
    };
    const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
    const payingFetch = wrapFetchWithPayment(recordingFetch as typeof fetch, client);
    const before = await chain.usdcBalance(payee.address);
    const res = await payingFetch(challengeUrl(payee.handle, '1.50'));
    expect(res.status).toBe(200);
    const receipt = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(receipt).toMatchObject({ success: true, network: 'eip155:31337', payer: payer.address, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await chain.usdcBalance(payee.address)).toBe(before + 1_500_000n);
    expect(sent).toHaveLength(1);

    const replay = await fetch(challengeUrl(payee.handle, '1.50'), { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
    expect(replay.status).toBe(402);
    expect(((await replay.json()) as { reason: string }).reason).toBe('payment_already_used');
    expect(await chain.usdcBalance(payee.address)).toBe(before + 1_500_000n);
  });

  it('the same payment header sent twice at once settles once', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
    const challenge = await fetch(challengeUrl(payee.handle, '2.00'));
    const paymentRequired = decodePaymentRequiredHeader(challenge.headers.get('payment-required')!);
    const payload = await client.createPaymentPayload(paymentRequired);
    const header = Buffer.from(JSON.stringify(payload)).toString('base64');
    const both = await Promise.all([0, 1].map(() => fetch(challengeUrl(payee.handle, '2.00'), { headers: { 'PAYMENT-SIGNATURE': header } })));
    expect(both.map((r) => r.status).sort()).toEqual([200, 402]);
    expect(await chain.usdcBalance(payee.address)).toBe(2_000_000n);
    expect(Number((await t.dataSource.query(`SELECT count(*)::int AS n FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()]))[0].n)).toBe(1);
  });

  describe('POST /x402/settle (agent)', () => {
    const settle = (key: string, body: Record<string, unknown>, idem: string | null = `x402-${randomUUID()}`) => {
      const req = t.http.post('/api/v1/x402/settle').set('X-Api-Key', key);
      if (idem) req.set('Idempotency-Key', idem);
      return req.send(body);
    };

    it('another server’s challenge: the answer’s PAYMENT-SIGNATURE is accepted by @x402/evm’s own verification; the payment is x402 and submitted; same key → same payment', async () => {
      const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
      const foreignPayTo = Wallet.createRandom().address;
      const requirement: PaymentRequirements = {
        scheme: 'exact',
        network: 'eip155:31337',
        asset: chain.usdc.address,
        amount: '1250000',
        payTo: foreignPayTo,
        maxTimeoutSeconds: 300,
        extra: { name: 'ignored', version: 'ignored' },
      };
      const paymentRequired = encodePaymentRequiredHeader({ x402Version: 2, resource: { url: 'https://data.example.com/report' }, accepts: [requirement] });
      const key = `x402-${randomUUID()}`;
      const res = await settle(agent.key, { paymentRequired }, key);
      expect(res.status).toBe(200);
      expect(res.body.payment).toMatchObject({ mode: 'x402', status: 'submitted', amount: '1.25', toAddress: foreignPayTo });
      expect(res.body.header.name).toBe('PAYMENT-SIGNATURE');
      const payload = decodePaymentSignatureHeader(res.body.header.value);
      const domain = await chain.usdc.eip712Domain();
      const facilitator = new FacilitatorExactEvmScheme(ethersVerifySigner(chain.provider, chain.relayer.address) as never);
      const verdict = await facilitator.verify(payload, { ...requirement, extra: { name: domain.name, version: domain.version } });
      expect(verdict).toMatchObject({ isValid: true, payer: agent.signerAddress });
      // Not sent by us: the signer still holds the float until the other server settles.
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(20n * USDC);
      // The worker's sweep resuming it (here: directly) holds it too: it is never relayed by us.
      const payments = t.app.get(PaymentsService);
      const resumed = await payments.resume((await payments.findForAgent(agent.agentId, res.body.payment.id))!);
      expect(resumed.status).toBe('submitted');
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(20n * USDC);
      const again = await settle(agent.key, { paymentRequired }, key);
      expect(again.body.payment.id).toBe(res.body.payment.id);
      expect(again.body.header.value).toBe(res.body.header.value);
    });

    it('our own challenge: settled on chain → {payment, settlement}; the payee gets the amount', async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
      const challenge = await fetch(challengeUrl(payee.handle, '3.00'));
      const res = await settle(agent.key, { paymentRequired: challenge.headers.get('payment-required')! });
      expect(res.status).toBe(200);
      expect(res.body.payment).toMatchObject({ mode: 'x402', amount: '3.00', to: payee.handle });
      expect(res.body.settlement).toMatchObject({ success: true, network: 'eip155:31337', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      await chain.provider.waitForTransaction(res.body.settlement.transaction);
      expect(await chain.usdcBalance(payee.address)).toBe(3n * USDC);
      // The v1 accepts entry of the same challenge works as the body too.
      const v1 = ((await challenge.json()) as { accepts: Array<Record<string, unknown>> }).accepts[0];
      expect((await settle(agent.key, v1)).body.payment).toMatchObject({ mode: 'x402', amount: '3.00' });
    });

    it('refusals: unsupported requirement 400, no Idempotency-Key 400, over the per-transaction limit 403 policy_denied', async () => {
      const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00', perTransactionMax: '1.00' } });
      const base402 = { scheme: 'exact', network: 'eip155:31337', asset: chain.usdc.address, amount: '500000', payTo: Wallet.createRandom().address, maxTimeoutSeconds: 60, extra: {} };
      const pr = (r: Record<string, unknown>) => encodePaymentRequiredHeader({ x402Version: 2, resource: { url: 'https://x.example/r' }, accepts: [r as unknown as PaymentRequirements] });
      expect(expectError(await settle(agent.key, { paymentRequired: pr({ ...base402, asset: Wallet.createRandom().address }) }), 400, 'invalid_request')).toMatchObject({ reason: 'unsupported_requirement' });
      expect(expectError(await settle(agent.key, { paymentRequired: pr({ ...base402, network: 'eip155:8453' }) }), 400, 'invalid_request')).toMatchObject({ reason: 'unsupported_requirement' });
      expectError(await settle(agent.key, { paymentRequired: pr(base402) }, null), 400, 'idempotency_required');
      expect(expectError(await settle(agent.key, { paymentRequired: pr({ ...base402, amount: '2000000' }) }), 403, 'policy_denied')).toMatchObject({ rule: 'per_transaction_limit' });
      expectError(await settle(agent.key, { paymentRequired: 'not base64 json' }), 400, 'invalid_request');
    });

    it('the body is validated by the kernel as the declared DTO (issue 31): every bad field named, unknown fields refused, no payment made', async () => {
      const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
      const entry = { scheme: 'exact', network: 'eip155:31337', maxAmountRequired: '500000', resource: 'https://x.example/r', payTo: Wallet.createRandom().address, asset: chain.usdc.address };
      const fields = (res: Awaited<ReturnType<typeof settle>>) => (expectError(res, 400, 'invalid_request')!.fields as Array<{ param: string; message: string }>);

      const bad = fields(await settle(agent.key, { ...entry, network: 31337, maxTimeoutSeconds: 'soon', extra: 'name', surprise: true }));
      expect(bad).toEqual(
        expect.arrayContaining([
          { param: 'network', message: 'network must be a string' },
          { param: 'maxTimeoutSeconds', message: expect.stringContaining('maxTimeoutSeconds must be') },
          { param: 'extra', message: 'extra must be an object' },
          { param: 'surprise', message: 'property surprise should not exist' },
        ]),
      );
      expect([...new Set(bad.map((f) => f.param))].sort()).toEqual(['extra', 'maxTimeoutSeconds', 'network', 'surprise']);
      // An empty body names every field a v1 entry needs (no paymentRequired given).
      const empty = fields(await settle(agent.key, {}));
      expect([...new Set(empty.map((f) => f.param))].sort()).toEqual(['asset', 'maxAmountRequired', 'network', 'payTo', 'resource', 'scheme']);
      // A v2 value with a stray field is refused too, not silently read.
      const pr = encodePaymentRequiredHeader({ x402Version: 2, resource: { url: 'https://x.example/r' }, accepts: [{ ...entry, amount: '500000', maxTimeoutSeconds: 60, extra: {} } as unknown as PaymentRequirements] });
      expect(fields(await settle(agent.key, { paymentRequired: pr, note: 'x' }))).toEqual([{ param: 'note', message: 'property note should not exist' }]);
      expect(fields(await settle(agent.key, { paymentRequired: 42 }))).toEqual(expect.arrayContaining([{ param: 'paymentRequired', message: 'paymentRequired must be a string' }]));
      expect(Number((await t.dataSource.query('SELECT count(*)::int AS n FROM payments WHERE agent_id = $1', [agent.agentId]))[0].n)).toBe(0);
    });
  });
});
