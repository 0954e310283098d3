import { Wallet } from 'ethers';

/**
 * Gives this test file's relayer key (test/setup/env.ts) 10,000 ETH on the run's anvil before its
 * first test, as anvil gives its own accounts. Skipped when the file's environment has no chain.
 */
beforeAll(async () => {
  const rpcUrl = process.env.RPC_URL;
  const key = process.env.RELAYER_PRIVATE_KEY;
  if (!rpcUrl || !key) return;
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_setBalance', params: [new Wallet(key).address, `0x${(10_000n * 10n ** 18n).toString(16)}`] }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json()) as { error?: { message: string } };
  if (body.error) throw new Error(`anvil_setBalance for the test relayer: ${body.error.message}`);
});
