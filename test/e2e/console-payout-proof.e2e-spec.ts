import { randomUUID } from 'node:crypto';
import { type BaseWallet, Contract, ContractFactory, Wallet } from 'ethers';
import { TestSmartWalletArtifact } from '@lib/contracts';
import { OrgsService } from '../../src/modules/orgs/orgs.service';
import { PAYOUT_ADDRESS_TYPES, payoutProofDomain } from '../../src/modules/orgs/payout-proof.service';
import { createTestApp, TestApp } from '../support/app';
import { createCheckout, fundOnChain, indexUntilStatus, TestChain, USDC } from '../support/chain';
import { consoleHeaders, consoleSignIn } from '../support/console';
import { expectError } from '../support/errors';
import { createOrg } from '../support/factories';

jest.setTimeout(120_000);

/**
 * A self-serve organisation's payout address is proven (issue 28 item 4): the signed-in address, or
 * an address that signed PayoutAddress (EIP-712; EIP-1271 for a contract wallet). Escrows are
 * attributed through the checkout, never to "the oldest organisation with this payout address".
 */
describe('console: the payout address is proven; escrow attribution does not follow an unproven address', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}` });
    chain = new TestChain();
  });
  afterAll(async () => {
    chain.close();
    await t.close();
  });

  const proof = async (signer: BaseWallet, owner: string, handle: string, payoutAddress: string) => {
    const deadline = Math.floor(Date.now() / 1000) + 600;
    const signature = await signer.signTypedData(payoutProofDomain(31337), PAYOUT_ADDRESS_TYPES, { owner, handle, payoutAddress, deadline });
    return { deadline, signature };
  };

  it("another address's wallet needs its signature: none or a stranger's → 403, its own → created", async () => {
    const me = Wallet.createRandom();
    const victim = Wallet.createRandom();
    const login = await consoleSignIn(t, me);
    const handle = `pay-${randomUUID().slice(0, 8)}`;
    const create = (body: Record<string, unknown>) => t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'P Co', handle, ...body });
    expect(expectError(await create({ payoutAddress: victim.address }), 403, 'forbidden')).toMatchObject({ reason: 'payout_address_proof_required' });
    expect(expectError(await create({ payoutAddress: victim.address, payoutProof: await proof(me, me.address, handle, victim.address) }), 403, 'forbidden')).toMatchObject({ reason: 'payout_address_proof_required' });
    expect(expectError(await create({ payoutAddress: victim.address, payoutProof: await proof(victim, me.address, `${handle}x`, victim.address) }), 403, 'forbidden')).toMatchObject({ reason: 'payout_address_proof_required' });
    const ok = await create({ payoutAddress: victim.address, payoutProof: await proof(victim, me.address, handle, victim.address) });
    expect(ok.status).toBe(200);
    expect(ok.body.payoutAddress).toBe(victim.address);
    // The signed-in address needs no proof.
    const own = await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Own Co', handle: `own-${randomUUID().slice(0, 8)}`, payoutAddress: me.address });
    expect(own.status).toBe(200);
  });

  it('a contract wallet proves itself by EIP-1271 isValidSignature', async () => {
    const me = Wallet.createRandom();
    const keyHolder = Wallet.createRandom();
    const deployer = await chain.wallet();
    const wallet = (await (await new ContractFactory(TestSmartWalletArtifact.abi, TestSmartWalletArtifact.bytecode, deployer).deploy(keyHolder.address)).waitForDeployment()) as Contract;
    const address = await wallet.getAddress();
    const login = await consoleSignIn(t, me);
    const handle = `sw-${randomUUID().slice(0, 8)}`;
    const create = (body: Record<string, unknown>) => t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'SW Co', handle, payoutAddress: address, ...body });
    expect(expectError(await create({ payoutProof: await proof(me, me.address, handle, address) }), 403, 'forbidden')).toMatchObject({ reason: 'payout_address_proof_required' });
    const ok = await create({ payoutProof: await proof(keyHolder, me.address, handle, address) });
    expect(ok.status).toBe(200);
    expect(ok.body.payoutAddress).toBe(address);
  });

  it("an escrow's buyer organisation is never an organisation that named the buyer's wallet without proving it", async () => {
    const buyer = await chain.wallet({ usdc: 100n * USDC });
    // A stranger's organisation made before this change with the buyer's wallet as payout address (unproven), the oldest.
    const stranger = Wallet.createRandom();
    const strangerOrg = await t.app.get(OrgsService).createOwnedOrganization(stranger.address, { name: 'Mallory', handle: `mal-${randomUUID().slice(0, 8)}`, payoutAddress: buyer.address });
    await t.dataSource.query(`UPDATE organizations SET payout_address_proven = false WHERE id = $1`, [strangerOrg.id]);
    const buyerOrg = await createOrg(t.app, { payoutAddress: buyer.address });
    const seller = await createOrg(t.app, { payoutAddress: (await chain.wallet()).address });
    const checkout = await createCheckout(t, seller, { amount: '2.00' });
    await fundOnChain(t, chain, checkout.id, buyer);
    await indexUntilStatus(t, seller, checkout.id, 'funded');
    const [row] = (await t.dataSource.query(`SELECT seller_organization_id, buyer_organization_id FROM escrows WHERE checkout_session_id = $1`, [checkout.id])) as Array<{ seller_organization_id: string; buyer_organization_id: string | null }>;
    expect(row).toEqual({ seller_organization_id: seller.organizationId, buyer_organization_id: buyerOrg.organizationId });
    const strangerLogin = await consoleSignIn(t, stranger);
    const listed = await t.http.get('/api/v1/escrows').set(consoleHeaders(strangerLogin, strangerOrg.id));
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain(checkout.id);
  });
});
