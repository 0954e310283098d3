import type { INestApplicationContext } from '@nestjs/common';
import { Interface, Wallet } from 'ethers';
import { TestUSDCArtifact } from '@lib/contracts';
import { AUTHORIZATION_CURSOR } from '../../src/chain/chain-cursors.repository';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { RelayerSender } from '../../src/chain/relayer/relayer-sender.service';
import { RelayerProcessor } from '../../src/chain/relayer/relayer.worker.module';
import { v7 as uuidv7 } from 'uuid';
import { createAgent, createPayee, pay, paymentRows, startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

const USDC_IFACE = new Interface(TestUSDCArtifact.abi);

interface RelayRow {
  id: string;
  nonce: string;
  status: string;
  tx_hash: string;
  tx_hashes: string[];
  mined_tx_hash: string | null;
  mined_block: string | null;
}

/**
 * A reorg removes the blocks that held relayer transactions the tender had recorded as mined
 * (DESIGN §18 "Relayer"/"Confirmations", issue 22 chaos "reorg"): anvil's `anvil_reorg` replaces the
 * last blocks with empty ones, so the transactions are gone from the chain and from the node's pool,
 * as after an `evm_revert`. The tender must notice and send the same signed bytes again, so the
 * payload runs exactly once on the canonical chain and no later nonce is stuck behind the gap.
 */
describe('relayer and reorgs', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    const saved = { CHAIN_POLL_MS: process.env.CHAIN_POLL_MS };
    Object.assign(process.env, { CHAIN_POLL_MS: '200' });
    try {
      worker = await startRelayerWorker();
    } finally {
      if (saved.CHAIN_POLL_MS === undefined) delete process.env.CHAIN_POLL_MS;
      else process.env.CHAIN_POLL_MS = saved.CHAIN_POLL_MS;
    }
  });
  afterAll(async () => {
    chain?.close();
    await worker?.close();
    await t?.close();
  });

  const relayRow = async (id: string): Promise<RelayRow> => (await t.dataSource.query(`SELECT * FROM relayer_transactions WHERE id = $1`, [id]))[0];

  it('relays recorded as mined whose blocks a reorg removed are sent again with the same bytes (same nonce, same hash): the payer pays once, the next nonce is not stuck', async () => {
    const relayer = t.app.get(RelayerService);
    const payer = await chain.wallet({ usdc: 5n * USDC });
    const payee = Wallet.createRandom().address;
    const auth = await chain.usdc.signTransferAuthorization(payer, { to: payee, value: USDC, validBefore: BigInt((await chain.headTimestamp()) + 3600) });
    // Automine: each relay is mined in its own block as it is sent.
    const a = await relayer.relay({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(auth), purpose: 'test', reference: 'reorg-a' });
    const b = await relayer.relay({ to: chain.usdc.address, data: USDC_IFACE.encodeFunctionData('approve', [payee, 7n]), purpose: 'test', reference: 'reorg-b' });
    const blockA = (await chain.provider.getTransactionReceipt(a.txHash))!.blockNumber;
    expect(await chain.usdcBalance(payee)).toBe(USDC);
    for (const id of [a.relayTxId, b.relayTxId]) await waitFor(async () => (await relayRow(id)).mined_tx_hash !== null, { label: 'the tender records the mined hash' });
    const before = await relayRow(a.relayTxId);

    // Both blocks (and one above) replaced by empty ones: the transfer and the approve are gone.
    const depth = (await chain.provider.getBlockNumber()) - blockA + 1;
    await chain.rpc('anvil_reorg', [depth, []]);
    expect(await chain.provider.getTransactionReceipt(a.txHash)).toBeNull();
    expect(await chain.provider.getTransactionReceipt(b.txHash)).toBeNull();
    expect(await chain.usdcBalance(payee)).toBe(0n);

    const receiptA = await waitFor(() => chain.provider.getTransactionReceipt(a.txHash), { label: 'the reorged transfer mined again', timeoutMs: 15_000 });
    const receiptB = await waitFor(() => chain.provider.getTransactionReceipt(b.txHash), { label: 'the reorged approve mined again' });
    expect(receiptA.status).toBe(1);
    expect(receiptB.status).toBe(1);
    expect(receiptA.blockNumber).toBeGreaterThan(blockA + depth - 1);
    expect(await chain.usdcBalance(payee)).toBe(USDC);
    expect(await chain.usdcBalance(payer.address)).toBe(4n * USDC);
    // The row kept its nonce and its one hash; the block it was mined in is the new one.
    const after = await waitFor(async () => {
      const row = await relayRow(a.relayTxId);
      return row.mined_block !== null && Number(row.mined_block) === receiptA.blockNumber ? row : null;
    }, { label: 'the new block recorded' });
    expect(after).toMatchObject({ status: 'broadcast', nonce: before.nonce, tx_hashes: [a.txHash], mined_tx_hash: a.txHash });
    // A later relay takes the next nonce and is mined: nothing stuck behind the reorg.
    const c = await relayer.relay({ to: chain.usdc.address, data: USDC_IFACE.encodeFunctionData('approve', [payee, 8n]), purpose: 'test', reference: 'reorg-c' });
    expect((await relayer.waitMined(c.relayTxId, 10_000))?.status).toBe(1);
  });

  it('the USDC authorization cursor follows a reorg: a payment whose transfer lands again at or below the cursor after the chain went back is still settled', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC });
    const settlement = t.app.get(PaymentSettlement);
    const cursor = async () => Number((await t.dataSource.query(`SELECT block_number FROM chain_cursors WHERE name = $1`, [AUTHORIZATION_CURSOR]))[0].block_number);
    // The indexer reads blocks S+1..S+3 of a branch the chain then abandons (evm_revert to S).
    const snapshot = await chain.rpc<string>('evm_snapshot');
    const s = await chain.provider.getBlockNumber();
    for (let i = 0; i < 3; i++) await chain.rpc('evm_mine');
    await settlement.pollOnce();
    expect(await cursor()).toBeGreaterThanOrEqual(s + 3);
    expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
    // On the canonical chain the payment's transfer is mined at S+1: below the cursor's old block.
    const paid = await pay(t, agent, { to: payee.handle, amount: '3.00' });
    expect(paid.body.status).toBe('submitted');
    const [row] = await paymentRows(t, agent.agentId);
    const receipt = (await chain.provider.getTransactionReceipt(row.relay_tx_hashes[0]))!;
    expect(receipt.blockNumber).toBeLessThanOrEqual(s + 3);
    for (let i = 0; i < 3; i++) await chain.rpc('evm_mine');
    await settlement.pollOnce();
    await settlement.pollOnce();
    expect((await paymentRows(t, agent.agentId))[0]).toMatchObject({ id: row.id, status: 'succeeded', tx_hash: receipt.hash });
  });

  it('a send that meets the gap a reorg left (before any tender pass saw it) revives the reorged row instead of taking its nonce', async () => {
    const relayer = t.app.get(RelayerService);
    const processor = worker.get(RelayerProcessor);
    const payer = await chain.wallet({ usdc: 5n * USDC });
    const payee = Wallet.createRandom().address;
    const auth = await chain.usdc.signTransferAuthorization(payer, { to: payee, value: USDC, validBefore: BigInt((await chain.headTimestamp()) + 3600) });
    const a = await relayer.relay({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(auth), purpose: 'test', reference: 'reorg-gap-a' });
    await waitFor(async () => (await relayRow(a.relayTxId)).mined_tx_hash !== null, { label: 'the tender records the mined hash' });
    const bId = uuidv7();
    await processor.worker.pause(); // no tender pass: the send itself meets the gap
    try {
      await chain.rpc('anvil_reorg', [(await chain.provider.getBlockNumber()) - (await chain.provider.getTransactionReceipt(a.txHash))!.blockNumber + 1, []]);
      expect(await chain.provider.getTransactionReceipt(a.txHash)).toBeNull();
      await t.dataSource.query(`INSERT INTO relayer_transactions (id, address, to_address, data, purpose, status) VALUES ($1, lower($2), $3, $4, 'test', 'queued')`, [
        bId,
        chain.relayer.address,
        chain.usdc.address,
        USDC_IFACE.encodeFunctionData('approve', [payee, 9n]),
      ]);
      const bHash = await worker.get(RelayerSender).send(bId);
      const receiptA = await waitFor(() => chain.provider.getTransactionReceipt(a.txHash), { label: 'the reorged transfer mined again', timeoutMs: 10_000 });
      expect(receiptA.status).toBe(1);
      expect((await chain.provider.getTransaction(bHash))!.nonce).toBe(Number((await relayRow(a.relayTxId)).nonce) + 1);
    } finally {
      if (processor.worker.isPaused()) await processor.worker.resume();
    }
    expect(await chain.usdcBalance(payee)).toBe(USDC);
    await waitFor(async () => (await relayRow(a.relayTxId)).mined_tx_hash === a.txHash, { label: 'the row mined again' });
    expect((await relayRow(a.relayTxId)).status).toBe('broadcast');
  });
});
