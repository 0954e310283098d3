import { TxSender } from '@lib/chain';
import { ChainFixture, USDC } from './chain-fixture';

/**
 * DESIGN §18/§22 (review F3): TxSender's wait for its own transaction is bounded. A transaction
 * that is broadcast but not mined in time is "pending" (ChainTxPendingError with its hash), never
 * "failed", and the next send from the same wallet is not held behind it.
 */
describe('TxSender wait bound against anvil', () => {
  let fx: ChainFixture;
  const WAIT_MS = 1_500;

  beforeAll(async () => {
    fx = await ChainFixture.start();
  });
  afterAll(async () => {
    await fx?.rpc('evm_setAutomine', [true]).catch(() => undefined);
    await fx?.stop();
  });
  afterEach(async () => {
    await fx.rpc('evm_setAutomine', [true]);
  });

  const transfer = (sender: TxSender, amount: bigint) =>
    sender.send(fx.wallets.buyer, fx.usdcGateway.address, fx.usdcGateway.encodeTransfer(fx.wallets.seller.address, amount), 'transfer');

  it('a transaction that is not mined within waitMs rejects as pending (with its hash), and the next send of the wallet still goes out and is mined', async () => {
    const sender = new TxSender(fx.provider, { waitMs: WAIT_MS });
    await fx.rpc('evm_setAutomine', [false]);
    const err = (await transfer(sender, 1n * USDC).then(
      () => null,
      (e: unknown) => e,
    )) as { name?: string; txHash?: string } | null;
    expect(err).toMatchObject({ name: 'ChainTxPendingError', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    // Still in the node's pool, not mined, not failed.
    expect(await fx.provider.getTransaction(err!.txHash!)).not.toBeNull();
    expect(await fx.provider.getTransactionReceipt(err!.txHash!)).toBeNull();

    await fx.rpc('evm_setAutomine', [true]);
    const second = await transfer(sender, 2n * USDC);
    expect((await fx.provider.getTransactionReceipt(second))?.status).toBe(1);
    // The first one was mined too (in the same block or before): it had not failed.
    expect((await fx.provider.getTransactionReceipt(err!.txHash!))?.status).toBe(1);
  });

  it('a transaction dropped from the pool rejects as pending, not as reverted', async () => {
    const sender = new TxSender(fx.provider, { waitMs: WAIT_MS });
    await fx.rpc('evm_setAutomine', [false]);
    const pending = transfer(sender, 3n * USDC).then(
      () => null,
      (e: unknown) => e,
    );
    // Drop it as soon as it is in the pool (the wait is then for a receipt that never comes).
    let hash: string | undefined;
    while (!hash) {
      const pool = await fx.rpc<{ pending: Record<string, Record<string, { hash: string }>> }>('txpool_content');
      hash = Object.values(pool.pending).flatMap((byNonce) => Object.values(byNonce))[0]?.hash;
      if (!hash) await new Promise((r) => setImmediate(r));
    }
    await fx.rpc('anvil_dropTransaction', [hash]);
    const err = (await pending) as { name?: string; txHash?: string } | null;
    expect(err).toMatchObject({ name: 'ChainTxPendingError', txHash: hash });
  });
});
