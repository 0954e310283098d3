import { x402Client } from '@x402/core/client';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { randomUUID } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import type { TestApp } from '../support/app';
import { useAgentStack } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';

jest.setTimeout(120_000);

/**
 * Refund of an x402 settlement this organisation received as a resource server (DESIGN §21): the
 * payer pays our challenge with the official `@x402/fetch` client; the payee organisation refunds
 * part of it to the payer by its receiving wallet's signature, relayed gaslessly.
 */
describe('refunds of an x402 settlement (DESIGN §21)', () => {
  let t: TestApp;
  let chain: TestChain;
  let base: string;
  useAgentStack({ env: { X402_MIN_AMOUNT: '0.01' }, listen: 'named', chainTime: true }, (s) => ({ t, chain, base } = s));

  it('the payee refunds 0.60 of a 1.50 settlement to the x402 payer; more than is left is refused', async () => {
    const payeeWallet = await chain.wallet();
    const handle = `shop-${randomUUID().slice(0, 8)}`;
    const payee = await createOrg(t.app, { payoutAddress: payeeWallet.address, handle });
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
    const res = await wrapFetchWithPayment(fetch, client)(`${base}/api/v1/x402/challenge?to=${handle}&amount=1.50`);
    expect(res.status).toBe(200);
    const [settlement] = await t.dataSource.query(`SELECT id, status FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()]);
    expect(settlement.status).toBe('settled');

    const refundOf = (amount: string, key = payee.key) =>
      t.http.post(`/api/v1/x402-settlements/${settlement.id}/refunds`).set('X-Api-Key', key).set('Idempotency-Key', randomUUID()).send({ amount });
    expect((await refundOf('0.60', (await createOrg(t.app)).key)).status).toBe(404);
    const refund = (await refundOf('0.60').expect(200)).body;
    expect(refund).toMatchObject({ status: 'requires_signature', from: payeeWallet.address, to: payer.address, source: { type: 'x402_settlement', id: settlement.id } });
    expect((await refundOf('0.91')).body).toMatchObject({ code: 'refund_exceeds_amount', details: { refundable: '0.90', received: '1.50' } });

    const payer0 = await chain.usdcBalance(payer.address);
    const signature = await payeeWallet.signTypedData(refund.typedData.domain, refund.typedData.types, refund.typedData.message);
    const done = await t.http.post(`/api/v1/refunds/${refund.id}/submit`).set('X-Api-Key', payee.key).set('Idempotency-Key', randomUUID()).send({ signature });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe('succeeded');
    expect((await chain.usdcBalance(payer.address)) - payer0).toBe(600_000n);
    const [{ refunded_units }] = await t.dataSource.query(`SELECT refunded_units::text FROM x402_settlements WHERE id = $1`, [settlement.id]);
    expect(refunded_units).toBe('600000');
  });
});
