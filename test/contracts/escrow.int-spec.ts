import { randomBytes } from 'node:crypto';
import { Signature, hexlify } from 'ethers';
import { ESCROW_STATES, escrowKeyFromId, type EscrowPartyAction, type EscrowState, type FundingTerms } from '@lib/chain';
import { ChainFixture, DAY, USDC } from './chain-fixture';

type Action = EscrowPartyAction | 'resolve';
type LiveState = Exclude<EscrowState, 'none'>;

const STATE_INDEX = Object.fromEntries(ESCROW_STATES.map((s, i) => [s, BigInt(i)])) as Record<EscrowState, bigint>;
const LIVE_STATES: LiveState[] = ['funded', 'accepted', 'delivered', 'released', 'refunded', 'cancelled', 'disputed'];
/** docs/architecture.md §7: the states each action may start from (release as the buyer). */
const ALLOWED_FROM: Record<Action, LiveState[]> = {
  accept: ['funded'],
  decline: ['funded', 'accepted'],
  markDelivered: ['accepted'],
  release: ['funded', 'accepted', 'delivered'],
  cancel: ['funded'],
  dispute: ['accepted', 'delivered'],
  resolve: ['disputed'],
};
const REFUSED = (Object.keys(ALLOWED_FROM) as Action[]).flatMap((action) =>
  LIVE_STATES.filter((s) => !ALLOWED_FROM[action].includes(s)).map((state) => [action, state] as const),
);

describe('CheckoutEscrow (docs/architecture.md §7) on anvil', () => {
  let fx: ChainFixture;

  beforeAll(async () => {
    fx = await ChainFixture.start();
  });
  afterAll(async () => {
    await fx?.stop();
  });

  const escrowState = async (key: string) => (await fx.gateway.getOnChainEscrow(key)).state;
  const asRightActor = (action: Action, key: string) => {
    const { buyer, seller, arbiter } = fx.wallets;
    if (action === 'resolve') return fx.gateway.resolve(arbiter, key, true);
    const actor = ['release', 'cancel', 'dispute'].includes(action) ? buyer : seller;
    return fx.gateway.act(actor, action, key);
  };

  describe('allowed paths and balances', () => {
    it('fund → accept → markDelivered → release moves the amount buyer → escrow → seller', async () => {
      const { buyer, seller } = fx.wallets;
      const escrowAddr = fx.gateway.escrowAddress;
      const [b0, s0, e0] = await fx.balances(buyer.address, seller.address, escrowAddr);

      const { key, terms } = await fx.fund();
      expect(await fx.balances(buyer.address, seller.address, escrowAddr)).toEqual([b0 - terms.amount, s0, e0 + terms.amount]);
      expect(await fx.gateway.getOnChainEscrow(key)).toEqual({
        buyer: buyer.address,
        seller: seller.address,
        amount: terms.amount,
        inspectionWindow: 3 * DAY,
        deliveredAt: 0,
        state: 'funded',
      });

      await fx.gateway.act(seller, 'accept', key);
      expect(await escrowState(key)).toBe('accepted');

      const deliverTx = await fx.gateway.act(seller, 'markDelivered', key);
      const delivered = await fx.gateway.getOnChainEscrow(key);
      const deliverBlock = await fx.provider.getBlock((await fx.provider.getTransactionReceipt(deliverTx))!.blockNumber);
      expect(delivered.state).toBe('delivered');
      expect(delivered.deliveredAt).toBe(deliverBlock!.timestamp);

      await fx.gateway.act(buyer, 'release', key);
      expect(await escrowState(key)).toBe('released');
      expect(await fx.balances(buyer.address, seller.address, escrowAddr)).toEqual([b0 - terms.amount, s0 + terms.amount, e0]);
    });

    it.each(['funded', 'accepted'] as const)('the buyer may also release straight from %s', async (state) => {
      const key = await fx.escrowIn(state);
      const [s0] = await fx.balances(fx.wallets.seller.address);
      await fx.gateway.act(fx.wallets.buyer, 'release', key);
      expect(await escrowState(key)).toBe('released');
      expect((await fx.balances(fx.wallets.seller.address))[0] - s0).toBe(125_500_000n);
    });

    it.each(['funded', 'accepted'] as const)('seller declines from %s: buyer refunded in full', async (state) => {
      const { buyer, seller } = fx.wallets;
      const [b0, s0] = await fx.balances(buyer.address, seller.address);
      const key = await fx.escrowIn(state);
      await fx.gateway.act(seller, 'decline', key);
      expect(await escrowState(key)).toBe('refunded');
      expect(await fx.balances(buyer.address, seller.address)).toEqual([b0, s0]);
    });

    it('buyer cancels from funded: refunded in full', async () => {
      const { buyer, seller } = fx.wallets;
      const [b0, s0, e0] = await fx.balances(buyer.address, seller.address, fx.gateway.escrowAddress);
      const key = await fx.escrowIn('funded');
      await fx.gateway.act(buyer, 'cancel', key);
      expect(await escrowState(key)).toBe('cancelled');
      expect(await fx.balances(buyer.address, seller.address, fx.gateway.escrowAddress)).toEqual([b0, s0, e0]);
    });

    it('buyer disputes from accepted, arbiter resolves to the seller', async () => {
      const { buyer, seller, arbiter } = fx.wallets;
      const [b0, s0] = await fx.balances(buyer.address, seller.address);
      const key = await fx.escrowIn('accepted');
      await fx.gateway.act(buyer, 'dispute', key);
      expect(await escrowState(key)).toBe('disputed');
      expect(await fx.balances(buyer.address, seller.address)).toEqual([b0 - 125_500_000n, s0]);
      await fx.gateway.resolve(arbiter, key, true);
      expect(await escrowState(key)).toBe('released');
      expect(await fx.balances(buyer.address, seller.address)).toEqual([b0 - 125_500_000n, s0 + 125_500_000n]);
    });

    it('seller disputes from delivered, arbiter resolves to the buyer', async () => {
      const { buyer, seller, arbiter } = fx.wallets;
      const [b0, s0] = await fx.balances(buyer.address, seller.address);
      const key = await fx.escrowIn('delivered');
      await fx.gateway.act(seller, 'dispute', key);
      expect(await escrowState(key)).toBe('disputed');
      await fx.gateway.resolve(arbiter, key, false);
      expect(await escrowState(key)).toBe('refunded');
      expect(await fx.balances(buyer.address, seller.address)).toEqual([b0, s0]);
    });

    it('a stranger may release only once the inspection window after delivery has passed', async () => {
      const snap = await fx.snapshot();
      try {
        const { stranger, seller } = fx.wallets;
        const key = await fx.escrowIn('delivered');
        const [s0] = await fx.balances(seller.address);

        await expect(fx.gateway.act(stranger, 'release', key)).rejects.toMatchObject({ errorName: 'InspectionWindowOpen' });
        await fx.increaseTime(3 * DAY - 120);
        await expect(fx.gateway.act(stranger, 'release', key)).rejects.toMatchObject({ errorName: 'InspectionWindowOpen' });
        expect(await escrowState(key)).toBe('delivered');

        await fx.increaseTime(120);
        const tx = await fx.gateway.act(stranger, 'release', key);
        expect(await escrowState(key)).toBe('released');
        expect((await fx.balances(seller.address))[0] - s0).toBe(125_500_000n);
        const [event] = fx.gateway.decodeLogs((await fx.provider.getTransactionReceipt(tx))!.logs);
        expect(event).toMatchObject({ action: 'released', by: stranger.address });
      } finally {
        await fx.revert(snap);
      }
    });

    it('the seller, too, may release after the inspection window (anyone may)', async () => {
      const snap = await fx.snapshot();
      try {
        const key = await fx.escrowIn('delivered');
        await expect(fx.gateway.act(fx.wallets.seller, 'release', key)).rejects.toMatchObject({ errorName: 'InspectionWindowOpen' });
        await fx.increaseTime(3 * DAY);
        await fx.gateway.act(fx.wallets.seller, 'release', key);
        expect(await escrowState(key)).toBe('released');
      } finally {
        await fx.revert(snap);
      }
    });

    it('a zero inspection window allows release by anyone right after delivery', async () => {
      const { key } = await fx.fund({ inspectionWindow: 0 });
      await fx.gateway.act(fx.wallets.seller, 'accept', key);
      await fx.gateway.act(fx.wallets.seller, 'markDelivered', key);
      await fx.gateway.act(fx.wallets.stranger, 'release', key);
      expect(await escrowState(key)).toBe('released');
    });
  });

  describe('wrong actors (checked before state)', () => {
    let funded: string;
    let accepted: string;
    let delivered: string;
    let disputed: string;
    let released: string;
    beforeAll(async () => {
      [funded, accepted, delivered, disputed, released] = [
        await fx.escrowIn('funded'),
        await fx.escrowIn('accepted'),
        await fx.escrowIn('delivered'),
        await fx.escrowIn('disputed'),
        await fx.escrowIn('released'),
      ];
    });

    const cases: Array<[EscrowPartyAction, 'funded' | 'accepted' | 'delivered', 'buyer' | 'seller' | 'stranger', string]> = [
      ['accept', 'funded', 'buyer', 'NotSeller'],
      ['accept', 'funded', 'stranger', 'NotSeller'],
      ['decline', 'funded', 'buyer', 'NotSeller'],
      ['decline', 'accepted', 'stranger', 'NotSeller'],
      ['markDelivered', 'accepted', 'buyer', 'NotSeller'],
      ['markDelivered', 'accepted', 'stranger', 'NotSeller'],
      ['release', 'funded', 'seller', 'NotBuyer'],
      ['release', 'accepted', 'stranger', 'NotBuyer'],
      ['release', 'delivered', 'stranger', 'InspectionWindowOpen'],
      ['cancel', 'funded', 'seller', 'NotBuyer'],
      ['cancel', 'funded', 'stranger', 'NotBuyer'],
      ['dispute', 'accepted', 'stranger', 'NotParty'],
      ['dispute', 'delivered', 'stranger', 'NotParty'],
    ];
    it.each(cases)('%s on a %s escrow by the %s → %s', async (action, state, who, errorName) => {
      const key = { funded, accepted, delivered }[state];
      await expect(fx.gateway.act(fx.wallets[who], action, key)).rejects.toMatchObject({ name: 'ChainTxError', errorName, txHash: null });
      expect(await escrowState(key)).toBe(state);
    });

    it.each(['buyer', 'seller', 'stranger', 'deployer'] as const)('resolve by the %s (not an arbiter) → NotArbiter', async (who) => {
      await expect(fx.gateway.resolve(fx.wallets[who], disputed, true)).rejects.toMatchObject({ errorName: 'NotArbiter' });
      expect(await escrowState(disputed)).toBe('disputed');
    });

    it('a wrong actor gets the actor error even when the state is wrong too', async () => {
      await expect(fx.gateway.act(fx.wallets.stranger, 'accept', released)).rejects.toMatchObject({ errorName: 'NotSeller' });
      await expect(fx.gateway.act(fx.wallets.stranger, 'cancel', released)).rejects.toMatchObject({ errorName: 'NotBuyer' });
      await expect(fx.gateway.act(fx.wallets.stranger, 'dispute', released)).rejects.toMatchObject({ errorName: 'NotParty' });
      await expect(fx.gateway.act(fx.wallets.stranger, 'release', released)).rejects.toMatchObject({ errorName: 'NotBuyer' });
      await expect(fx.gateway.resolve(fx.wallets.stranger, funded, true)).rejects.toMatchObject({ errorName: 'NotArbiter' });
    });
  });

  describe('wrong states', () => {
    const keys = {} as Record<LiveState, string>;
    beforeAll(async () => {
      for (const state of LIVE_STATES) keys[state] = await fx.escrowIn(state);
    });

    it.each(REFUSED)('%s from %s → InvalidState(current)', async (action, state) => {
      await expect(asRightActor(action, keys[state])).rejects.toMatchObject({
        errorName: 'InvalidState',
        errorArgs: [STATE_INDEX[state]],
      });
      expect(await escrowState(keys[state])).toBe(state);
    });

    it.each(Object.keys(ALLOWED_FROM) as Action[])('%s on an escrow that was never funded → EscrowNotFound', async (action) => {
      await expect(asRightActor(action, hexlify(randomBytes(32)))).rejects.toMatchObject({ errorName: 'EscrowNotFound' });
    });

    it('double release: the second release is refused and pays nothing', async () => {
      const key = await fx.escrowIn('funded');
      await fx.gateway.act(fx.wallets.buyer, 'release', key);
      const [s0] = await fx.balances(fx.wallets.seller.address);
      await expect(fx.gateway.act(fx.wallets.buyer, 'release', key)).rejects.toMatchObject({
        errorName: 'InvalidState',
        errorArgs: [STATE_INDEX.released],
      });
      expect(await fx.balances(fx.wallets.seller.address)).toEqual([s0]);
    });

    it('double fund of the same terms is refused; another buyer is not the terms buyer', async () => {
      const terms = await fx.terms();
      const sig = await fx.signTerms(terms);
      await fx.senders.fundWithTerms(fx.wallets.buyer, terms, sig);
      const [b2] = await fx.balances(fx.wallets.buyer2.address);
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, terms, sig)).rejects.toMatchObject({ errorName: 'AlreadyFunded' });
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer2, terms, sig)).rejects.toMatchObject({ errorName: 'NotTermsBuyer' });
      expect(await fx.balances(fx.wallets.buyer2.address)).toEqual([b2]);
      expect((await fx.gateway.getOnChainEscrow(terms.escrowKey)).buyer).toBe(fx.wallets.buyer.address);
    });
  });

  describe('funding terms (EIP-712, signed by termsSigner)', () => {
    it('the local digest equals the contract fundingTermsDigest', async () => {
      const terms = await fx.terms();
      const onChain = await fx.escrow.fundingTermsDigest({
        escrowId: terms.escrowKey,
        buyer: terms.buyer,
        seller: terms.seller,
        amount: terms.amount,
        inspectionWindow: terms.inspectionWindow,
        deadline: terms.deadline,
      });
      expect(onChain).toBe(fx.gateway.fundingTermsDigest(terms, fx.chainId));
    });

    it('terms signed by another key → InvalidTermsSignature', async () => {
      const terms = await fx.terms();
      const sig = await fx.signTerms(terms, fx.wallets.stranger);
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, terms, sig)).rejects.toMatchObject({ errorName: 'InvalidTermsSignature' });
    });

    it('a malformed signature → InvalidTermsSignature', async () => {
      const terms = await fx.terms();
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, terms, '0x1234')).rejects.toMatchObject({ errorName: 'InvalidTermsSignature' });
    });

    it('terms signed for another chain id → InvalidTermsSignature', async () => {
      const terms = await fx.terms();
      const sig = await fx.signTerms(terms, fx.wallets.termsSigner, 1);
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, terms, sig)).rejects.toMatchObject({ errorName: 'InvalidTermsSignature' });
    });

    it.each([
      ['amount', (t: FundingTerms) => ({ ...t, amount: 1n * USDC })],
      ['seller', (t: FundingTerms) => ({ ...t, seller: '0x000000000000000000000000000000000000dEaD' })],
      ['inspection window', (t: FundingTerms) => ({ ...t, inspectionWindow: 0 })],
      ['deadline', (t: FundingTerms) => ({ ...t, deadline: BigInt(t.deadline) + 60n })],
      ['escrow id', (t: FundingTerms) => ({ ...t, escrowKey: escrowKeyFromId('00000000-0000-7000-8000-000000000001') })],
    ])('terms signed for another %s → InvalidTermsSignature', async (_field, change) => {
      const signed = await fx.terms();
      const sig = await fx.signTerms(signed);
      const submitted = change(signed);
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, submitted, sig)).rejects.toMatchObject({ errorName: 'InvalidTermsSignature' });
      expect((await fx.gateway.getOnChainEscrow(submitted.escrowKey)).state).toBe('none');
    });

    it('expired terms → TermsExpired', async () => {
      const expired = await fx.terms({ deadline: (await fx.now()) - 1 });
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, expired, await fx.signTerms(expired))).rejects.toMatchObject({
        errorName: 'TermsExpired',
      });
    });

    it.each([
      [0, 'funded'],
      [1, 'none'],
    ] as const)('funding mined at deadline + %i s leaves the escrow %s (block.timestamp <= deadline)', async (late, expected) => {
      const snap = await fx.snapshot();
      try {
        const { buyer } = fx.wallets;
        const deadline = (await fx.now()) + 100;
        const terms = await fx.terms({ deadline });
        const sig = await fx.signTerms(terms);
        await (await fx.usdc.connect(buyer).getFunction('approve')(fx.gateway.escrowAddress, terms.amount)).wait();
        await fx.rpc('evm_setNextBlockTimestamp', [deadline + late]);
        const struct = { ...terms, escrowId: terms.escrowKey };
        const tx = await fx.escrow.connect(buyer).getFunction('fund')(struct, sig, { gasLimit: 300_000 });
        const status = await tx.wait().then(
          (r: { status: number }) => r.status,
          () => 0,
        );
        expect(status).toBe(late === 0 ? 1 : 0);
        expect((await fx.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe(expected);
      } finally {
        await fx.revert(snap);
      }
    });

    it('zero amount → ZeroAmount; inspection window over 365 days → InvalidInspectionWindow', async () => {
      const zero = await fx.terms({ amount: 0n });
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, zero, await fx.signTerms(zero))).rejects.toMatchObject({ errorName: 'ZeroAmount' });
      const long = await fx.terms({ inspectionWindow: 366 * DAY });
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, long, await fx.signTerms(long))).rejects.toMatchObject({
        errorName: 'InvalidInspectionWindow',
      });
    });

    it('a buyer without enough USDC cannot fund (token error surfaces)', async () => {
      const terms = await fx.terms({ buyer: fx.wallets.stranger.address });
      await expect(fx.senders.fundWithTerms(fx.wallets.stranger, terms, await fx.signTerms(terms))).rejects.toMatchObject({
        errorName: 'ERC20InsufficientBalance',
      });
    });

    it('after the admin rotates the terms signer, terms of the old key are refused and of the new key accepted', async () => {
      const snap = await fx.snapshot();
      try {
        const { deployer, stranger, termsSigner } = fx.wallets;
        await expect(
          fx.escrow.connect(stranger).getFunction('setTermsSigner').staticCall(stranger.address),
        ).rejects.toMatchObject({ revert: { name: 'AccessControlUnauthorizedAccount' } });
        await (await fx.escrow.connect(deployer).getFunction('setTermsSigner')(stranger.address)).wait();
        expect(await fx.escrow.termsSigner()).toBe(stranger.address);

        const old = await fx.terms();
        await expect(fx.senders.fundWithTerms(fx.wallets.buyer, old, await fx.signTerms(old, termsSigner))).rejects.toMatchObject({
          errorName: 'InvalidTermsSignature',
        });
        const fresh = await fx.terms();
        await fx.senders.fundWithTerms(fx.wallets.buyer, fresh, await fx.signTerms(fresh, stranger));
        expect((await fx.gateway.getOnChainEscrow(fresh.escrowKey)).state).toBe('funded');
      } finally {
        await fx.revert(snap);
      }
    });
  });

  describe('fundWithAuthorization (EIP-3009, relayer pays gas)', () => {
    it('relayer submits the buyer-signed authorization; the buyer pays USDC but no gas and becomes the buyer', async () => {
      const { relayer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer2.address });
      const sig = await fx.signTerms(terms);
      const [usdc0, eth0, relayerEth0] = [
        (await fx.balances(buyer2.address))[0],
        await fx.provider.getBalance(buyer2.address),
        await fx.provider.getBalance(relayer.address),
      ];

      const txHash = await fx.senders.fundWithAuthorization(relayer, buyer2, terms, sig);

      expect((await fx.balances(buyer2.address))[0]).toBe(usdc0 - terms.amount);
      expect(await fx.provider.getBalance(buyer2.address)).toBe(eth0);
      expect(await fx.provider.getBalance(relayer.address)).toBeLessThan(relayerEth0);
      expect(await fx.gateway.getOnChainEscrow(terms.escrowKey)).toMatchObject({ buyer: buyer2.address, state: 'funded' });
      expect(await fx.usdc.authorizationState(buyer2.address, fx.gateway.fundingTermsDigest(terms, fx.chainId))).toBe(true);
      const receipt = await fx.provider.getTransactionReceipt(txHash);
      expect(receipt!.from).toBe(relayer.address);
      expect(fx.gateway.decodeLogs(receipt!.logs)).toEqual([
        expect.objectContaining({ action: 'funded', buyer: buyer2.address, seller: terms.seller, amount: terms.amount }),
      ]);
    });

    it('a reused authorization is refused: same terms → AlreadyFunded, other terms → AuthorizationNonceMismatch', async () => {
      const { relayer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer2.address });
      const sig = await fx.signTerms(terms);
      const auth = await fx.gateway.signReceiveAuthorization(buyer2, terms);
      await fx.senders.submitFundWithAuthorization(relayer, terms, sig, auth);
      await expect(fx.senders.submitFundWithAuthorization(relayer, terms, sig, auth)).rejects.toMatchObject({ errorName: 'AlreadyFunded' });

      const other = await fx.terms({ amount: terms.amount, buyer: buyer2.address });
      await expect(fx.senders.submitFundWithAuthorization(relayer, other, await fx.signTerms(other), auth)).rejects.toMatchObject({
        errorName: 'AuthorizationNonceMismatch',
      });
    });

    it('an authorization cancelled by the buyer cannot fund → AuthorizationUsedOrCanceled', async () => {
      const { relayer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer2.address });
      const auth = await fx.gateway.signReceiveAuthorization(buyer2, terms);
      const domain = await fx.gateway.receiveAuthorizationRequest(buyer2.address, terms).then((r) => r.domain);
      const cancelSig = await buyer2.signTypedData(
        domain,
        { CancelAuthorization: [{ name: 'authorizer', type: 'address' }, { name: 'nonce', type: 'bytes32' }] },
        { authorizer: buyer2.address, nonce: auth.nonce },
      );
      const { v, r, s } = Signature.from(cancelSig);
      await (await fx.usdc.connect(relayer).getFunction('cancelAuthorization')(buyer2.address, auth.nonce, v, r, s)).wait();
      await expect(fx.senders.submitFundWithAuthorization(relayer, terms, await fx.signTerms(terms), auth)).rejects.toMatchObject({
        errorName: 'AuthorizationUsedOrCanceled',
      });
    });

    it('an expired or not yet valid authorization is refused by the token', async () => {
      const { relayer, buyer2 } = fx.wallets;
      const now = BigInt(await fx.now());
      const terms = await fx.terms({ buyer: buyer2.address });
      const sig = await fx.signTerms(terms);
      const expired = await fx.gateway.signReceiveAuthorization(buyer2, terms, { validBefore: now - 1n });
      await expect(fx.senders.submitFundWithAuthorization(relayer, terms, sig, expired)).rejects.toMatchObject({
        errorName: 'AuthorizationExpired',
      });
      const early = await fx.gateway.signReceiveAuthorization(buyer2, terms, { validAfter: now + 3600n });
      await expect(fx.senders.submitFundWithAuthorization(relayer, terms, sig, early)).rejects.toMatchObject({
        errorName: 'AuthorizationNotYetValid',
      });
      expect((await fx.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('none');
    });

    it('an authorization claimed for another buyer → InvalidAuthorizationSignature', async () => {
      const { relayer, buyer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer.address });
      const auth = await fx.gateway.signReceiveAuthorization(buyer2, terms);
      await expect(
        fx.senders.submitFundWithAuthorization(relayer, terms, await fx.signTerms(terms), { ...auth, from: buyer.address }),
      ).rejects.toMatchObject({ errorName: 'InvalidAuthorizationSignature' });
    });

    it('expired terms are refused even with a valid authorization → TermsExpired', async () => {
      const terms = await fx.terms({ deadline: (await fx.now()) - 10, buyer: fx.wallets.buyer2.address });
      const auth = await fx.gateway.signReceiveAuthorization(fx.wallets.buyer2, terms, { validBefore: BigInt(await fx.now()) + 3600n });
      await expect(
        fx.senders.submitFundWithAuthorization(fx.wallets.relayer, terms, await fx.signTerms(terms), auth),
      ).rejects.toMatchObject({ errorName: 'TermsExpired' });
    });

    it('the USDC token refuses receiveWithAuthorization from anyone but the payee (front-running guard)', async () => {
      const { relayer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer2.address });
      const auth = await fx.gateway.signReceiveAuthorization(buyer2, terms);
      await expect(
        fx.usdc
          .connect(relayer)
          .getFunction('receiveWithAuthorization')
          .staticCall(auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, auth.v, auth.r, auth.s),
      ).rejects.toMatchObject({ revert: { name: 'CallerMustBePayee' } });
    });
  });
});
