import { Wallet } from 'ethers';
import { startAgentStack, type AgentStack } from '../support/agents';
import { createCheckout, createParties, indexUntilStatus, Party, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { RpcFault, RpcGate } from '../support/rpc-gate';

jest.setTimeout(180_000);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };
const sign = (wallet: Wallet, typedData: TypedData) =>
  wallet.signTypedData(typedData.domain, Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain')), typedData.message);

/** A node error without revert data, as a node answers after a reorg. */
const HEADER_NOT_FOUND: RpcFault = { rpcError: { code: -32603, message: 'header not found' } };

/**
 * Issue 29 finding 3 (DESIGN §22 "Reads that fail answer 503"): the pay page's simulation of a signed
 * funding or buyer action (eth_estimateGas) that meets a node error answers 503 `unavailable` with
 * `details.reason: "node_error"` and `Retry-After`, stores nothing, and the same signed request sent again
 * goes through; never 400 `rejected`. The api reads the chain through an RPC gate (the relayer worker and
 * the test talk to anvil directly).
 */
describe('pay page: a simulation that meets a node error answers 503 node_error (issue 29 finding 3)', () => {
  let gate: RpcGate;
  let stack: AgentStack;
  let seller: Party;

  beforeAll(async () => {
    gate = await RpcGate.start(process.env.RPC_URL!);
    stack = await startAgentStack({ env: { RPC_URL: gate.url } });
    ({ seller } = await createParties(stack.t, stack.chain, 0n));
  });
  afterEach(() => gate.clearFaults());
  afterAll(async () => {
    await stack?.close();
    await gate?.stop();
  });

  const expectNodeError = (res: { status: number; headers: Record<string, string>; body: Record<string, unknown> }) => {
    expectError(res as never, 503, 'unavailable');
    expect((res.body.details as Record<string, unknown>).reason).toBe('node_error');
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
  };

  it('funding (POST /checkout/{id}/relay) and a buyer action (POST /checkout/{id}/actions): 503 node_error, nothing stored; the same request again succeeds', async () => {
    const { t, chain } = stack;
    const buyer = await chain.wallet({ usdc: 100n * USDC, eth: false });
    const checkout = await createCheckout(t, seller.org, { amount: '3.00' });
    const funding = await t.http.get(`/checkout/${checkout.id}/funding`).query({ buyer: buyer.address });
    const fm = funding.body.typedData.message as Record<string, string>;
    const fundBody = { buyer: buyer.address, validAfter: fm.validAfter, validBefore: fm.validBefore, nonce: fm.nonce, signature: await sign(buyer, funding.body.typedData) };
    const failed0 = gate.failed.eth_estimateGas ?? 0;
    gate.fail('eth_estimateGas', HEADER_NOT_FOUND, 2);
    const refused = await t.http.post(`/checkout/${checkout.id}/relay`).send(fundBody);
    // Proof of the fault: the simulation met the node error.
    expect((gate.failed.eth_estimateGas ?? 0) - failed0).toBeGreaterThanOrEqual(1);
    expectNodeError(refused);
    expect(await t.dataSource.query(`SELECT id FROM checkout_relays WHERE checkout_session_id = $1`, [checkout.id])).toEqual([]);
    gate.clearFaults();
    const relayed = await t.http.post(`/checkout/${checkout.id}/relay`).send(fundBody);
    expect(relayed.status).toBe(200);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');

    const typed = await t.http.get(`/checkout/${checkout.id}/actions/cancel`).query({ actor: buyer.address });
    const m = typed.body.typedData.message as { nonce: string; deadline: number };
    const actionBody = { action: 'cancel', actor: buyer.address, nonce: m.nonce, deadline: Number(m.deadline), signature: await sign(buyer, typed.body.typedData) };
    const failed1 = gate.failed.eth_estimateGas ?? 0;
    gate.fail('eth_estimateGas', HEADER_NOT_FOUND, 2);
    const refusedAction = await t.http.post(`/checkout/${checkout.id}/actions`).send(actionBody);
    expect((gate.failed.eth_estimateGas ?? 0) - failed1).toBeGreaterThanOrEqual(1);
    expectNodeError(refusedAction);
    const reference = `${buyer.address.toLowerCase()}:${m.nonce.toLowerCase()}`;
    expect(await t.dataSource.query(`SELECT id FROM relayer_transactions WHERE purpose = 'buyer-cancel' AND reference = $1`, [reference])).toEqual([]);
    gate.clearFaults();
    const acted = await t.http.post(`/checkout/${checkout.id}/actions`).send(actionBody);
    expect(acted.status).toBe(200);
    await indexUntilStatus(t, seller.org, checkout.id, 'open');
    expect(await chain.usdcBalance(buyer.address)).toBe(100n * USDC);
  });
});
