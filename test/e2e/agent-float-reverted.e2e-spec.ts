import { hexlify, parseUnits, randomBytes, Wallet } from 'ethers';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { ownerDomain, WITHDRAW_TYPES } from '../../src/modules/agents/owner-messages';
import { SignerVault } from '../../src/modules/agents/signer-vault.service';
import { createAgent, TestAgent, useAgentStack } from '../support/agents';
import { TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { relayIntentProbe } from '../support/relay-intent';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

/**
 * The agent's float back to its owner (Withdraw, and the sweep when the signer is disabled) is
 * answered by what the chain did: a transfer mined and reverted is a 409 `reverted`, never a hash
 * presented as money moved. The fault, on the real chain: mining is stopped while the relayed
 * transfer waits in the pool; the signer's own authorization moving its whole float, sent by another
 * wallet at a higher tip, is mined first in the same block, so the relayed transfer reverts.
 */
describe('float transfers mined and reverted are refusals, not successes', () => {
  let t: TestApp;
  let chain: TestChain;
  // A long chain wait: the request is still waiting when its transfer is mined.
  useAgentStack({ env: { CHAIN_WAIT_MS: '60000' } }, (s) => ({ t, chain } = s));
  const probe = relayIntentProbe(
    () => t,
    () => chain,
  );
  afterEach(() => probe.automine(true));

  /** Waits for the relayed transfer to the owner in the pool, then mines, ahead of it, the signer's whole float sent elsewhere. */
  async function drainAheadOf(agent: TestAgent, float: bigint): Promise<void> {
    await waitFor(async () => (await probe.pooledWith(agent.owner.address)) === 1, { label: 'the relayed transfer in the pool' });
    const signer = await t.app.get(SignerVault).wallet(agent.agentId);
    const sink = Wallet.createRandom().address;
    const now = (await chain.provider.getBlock('latest'))!.timestamp;
    const auth = await chain.usdc.signTransferAuthorization(signer, { to: sink, value: float, validBefore: BigInt(now + 600) });
    const sender = await chain.wallet();
    await sender.sendTransaction({
      to: chain.usdc.address,
      data: chain.usdc.encodeTransferWithAuthorization(auth),
      gasLimit: 200_000n,
      maxPriorityFeePerGas: parseUnits('50', 'gwei'),
      maxFeePerGas: parseUnits('100', 'gwei'),
    });
    await chain.mine();
    expect(await chain.usdcBalance(sink)).toBe(float);
  }

  /** The fault happened: the relayer's transfer of the intent was mined and reverted. */
  async function revertedOnChain(purpose: string, reference: string): Promise<string> {
    const [row] = await probe.rows(purpose, reference);
    const receipt = await chain.provider.getTransactionReceipt(row.tx_hash!);
    expect(receipt?.status).toBe(0);
    return row.tx_hash!;
  }

  it('Withdraw: 409 reverted with the mined hash; the owner got nothing', async () => {
    const float = 30n * USDC;
    const agent = await createAgent(t, chain, { float });
    const owner0 = await chain.usdcBalance(agent.owner.address);
    const nonce = hexlify(randomBytes(32));
    const deadline = Math.floor(Date.now() / 1000) + 600;
    const signature = await agent.owner.signTypedData(ownerDomain(31337), WITHDRAW_TYPES, { agentId: agent.agentId, amount: 10n * USDC, nonce, deadline });
    await probe.automine(false);
    const answer = t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send({ amount: '10.00', nonce, deadline, signature });
    const [res] = await Promise.all([answer, drainAheadOf(agent, float)]);
    const txHash = await revertedOnChain('withdraw', `${agent.agentId}:${nonce}`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'invalid_request', details: { reason: 'reverted', txHash } });
    expect(await chain.usdcBalance(agent.owner.address)).toBe(owner0);
  });

  it('the sweep on disabling the signer: 409 reverted; the signer stays disabled', async () => {
    const float = 12n * USDC;
    const agent = await createAgent(t, chain, { float });
    const owner0 = await chain.usdcBalance(agent.owner.address);
    const agents = t.app.get(AgentsService);
    await probe.automine(false);
    const [outcome] = await Promise.all([agents.setSignerEnabled(agent.agentId, false).then(() => null, (err: unknown) => err), drainAheadOf(agent, float)]);
    const txHash = await revertedOnChain('sweep', `${agent.agentId}:sweep`);
    expect(outcome).toMatchObject({ status: 409, code: 'invalid_request', details: { reason: 'reverted', txHash } });
    expect(await chain.usdcBalance(agent.owner.address)).toBe(owner0);
    expect((await agents.view(agent.agentId)).signer.enabled).toBe(false);
  });
});
