import { hexlify, randomBytes, TypedDataEncoder, ZeroAddress } from 'ethers';
import { ESCROW_ACTION_TYPES, MAX_ESCROW_ACTION_VALIDITY, type EscrowPartyAction } from '@lib/chain';
import { ChainFixture } from './chain-fixture';

/**
 * Contract v2 (docs/architecture.md §13): buyer-bound FundingTerms, EscrowAction signatures relayed
 * through `...BySig` with `by` in every party event, single-use nonces per actor, deadlines at most one
 * hour ahead, and role-gated voidTerms.
 */
describe('CheckoutEscrow v2 on anvil', () => {
  let fx: ChainFixture;

  beforeAll(async () => {
    fx = await ChainFixture.start();
  });
  afterAll(async () => {
    await fx?.stop();
  });

  const state = async (key: string) => (await fx.gateway.getOnChainEscrow(key)).state;
  const sign = async (who: 'buyer' | 'seller' | 'stranger', action: EscrowPartyAction, key: string, options: { nonce?: string; deadline?: number } = {}) =>
    fx.gateway.signEscrowAction(fx.wallets[who], action, key, { now: await fx.now(), ...options });

  describe('buyer-bound funding terms', () => {
    it('fund by an address other than the terms buyer reverts NotTermsBuyer; the terms buyer funds them', async () => {
      const { buyer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer.address });
      const sig = await fx.signTerms(terms);
      const [b2] = await fx.balances(buyer2.address);
      await expect(fx.senders.fundWithTerms(buyer2, terms, sig)).rejects.toMatchObject({ errorName: 'NotTermsBuyer' });
      expect(await fx.balances(buyer2.address)).toEqual([b2]);
      expect(await state(terms.escrowKey)).toBe('none');
      await fx.senders.fundWithTerms(buyer, terms, sig);
      expect(await fx.gateway.getOnChainEscrow(terms.escrowKey)).toMatchObject({ state: 'funded', buyer: buyer.address });
    });

    it('fundWithAuthorization from an address other than the terms buyer reverts NotTermsBuyer, even with a valid authorization', async () => {
      const { relayer, buyer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer.address });
      const auth = await fx.gateway.signReceiveAuthorization(buyer2, terms);
      await expect(fx.senders.submitFundWithAuthorization(relayer, terms, await fx.signTerms(terms), auth)).rejects.toMatchObject({
        errorName: 'NotTermsBuyer',
      });
      expect(await fx.usdc.authorizationState(buyer2.address, auth.nonce)).toBe(false);
    });

    it('changing the buyer of signed terms breaks the terms signature', async () => {
      const terms = await fx.terms({ buyer: fx.wallets.buyer.address });
      const sig = await fx.signTerms(terms);
      const stolen = { ...terms, buyer: fx.wallets.buyer2.address };
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer2, stolen, sig)).rejects.toMatchObject({ errorName: 'InvalidTermsSignature' });
    });

    it('terms for the zero buyer can be funded by nobody', async () => {
      const terms = await fx.terms({ buyer: ZeroAddress });
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, terms, await fx.signTerms(terms))).rejects.toMatchObject({ errorName: 'NotTermsBuyer' });
    });
  });

  describe('EscrowAction signatures relayed by anyone (...BySig)', () => {
    it('a full life cycle signed by the parties and sent by the relayer; every event names the party in `by`', async () => {
      const { relayer, buyer, seller } = fx.wallets;
      const { key, terms, txHash: fundTx } = await fx.fund();
      const [s0] = await fx.balances(seller.address);
      const buyerEth = await fx.provider.getBalance(buyer.address);
      const sellerEth = await fx.provider.getBalance(seller.address);

      const txs = [
        await fx.senders.actBySig(relayer, await sign('seller', 'accept', key)),
        await fx.senders.actBySig(relayer, await sign('seller', 'markDelivered', key)),
        await fx.senders.actBySig(relayer, await sign('buyer', 'release', key)),
      ];
      expect(await state(key)).toBe('released');
      expect(await fx.balances(seller.address)).toEqual([s0 + terms.amount]);
      expect(await fx.provider.getBalance(buyer.address)).toBe(buyerEth);
      expect(await fx.provider.getBalance(seller.address)).toBe(sellerEth);

      const events = [];
      for (const tx of [fundTx, ...txs]) {
        const receipt = (await fx.provider.getTransactionReceipt(tx))!;
        events.push(...fx.gateway.decodeLogs(receipt.logs));
      }
      expect(events.map((e) => [e.action, 'by' in e ? e.by : null])).toEqual([
        ['funded', buyer.address],
        ['accepted', seller.address],
        ['delivered', seller.address],
        ['released', buyer.address],
      ]);
      // The API's transaction check reads `by`, not the relayer that sent it.
      await expect(fx.gateway.verifyActionTx(txs[2], { escrowKey: key, action: 'released', expectedSender: [buyer.address] })).resolves.toMatchObject({
        from: relayer.address,
        by: buyer.address,
      });
      await expect(fx.gateway.verifyActionTx(txs[2], { escrowKey: key, action: 'released', expectedSender: [relayer.address] })).rejects.toMatchObject({
        reason: 'wrong_sender',
      });
    });

    it('cancel, decline and dispute by signature refund or lock exactly as the direct calls', async () => {
      const { relayer, buyer } = fx.wallets;
      const cancelled = await fx.fund();
      const [b0] = await fx.balances(buyer.address);
      await fx.senders.actBySig(relayer, await sign('buyer', 'cancel', cancelled.key));
      expect(await state(cancelled.key)).toBe('cancelled');
      expect(await fx.balances(buyer.address)).toEqual([b0 + cancelled.terms.amount]);

      const declined = await fx.fund();
      await fx.senders.actBySig(relayer, await sign('seller', 'decline', declined.key));
      expect(await state(declined.key)).toBe('refunded');

      const disputed = await fx.escrowIn('accepted');
      const tx = await fx.senders.actBySig(relayer, await sign('seller', 'dispute', disputed));
      expect(await state(disputed)).toBe('disputed');
      const [event] = fx.gateway.decodeLogs((await fx.provider.getTransactionReceipt(tx))!.logs);
      expect(event).toMatchObject({ action: 'disputed', by: fx.wallets.seller.address });
    });

    it.each([
      ['accept', 'buyer', 'NotSeller'],
      ['accept', 'stranger', 'NotSeller'],
      ['cancel', 'seller', 'NotBuyer'],
      ['release', 'stranger', 'NotBuyer'],
      ['decline', 'buyer', 'NotSeller'],
    ] as const)('%s signed by the wrong actor (%s) reverts %s', async (action, who, errorName) => {
      const key = await fx.escrowIn('funded');
      await expect(fx.senders.actBySig(fx.wallets.relayer, await sign(who, action, key))).rejects.toMatchObject({ errorName });
      expect(await state(key)).toBe('funded');
    });

    it('a signature claimed for another actor reverts InvalidActionSignature', async () => {
      const key = await fx.escrowIn('funded');
      const bySeller = await sign('stranger', 'cancel', key);
      await expect(fx.senders.actBySig(fx.wallets.relayer, { ...bySeller, actor: fx.wallets.buyer.address })).rejects.toMatchObject({
        errorName: 'InvalidActionSignature',
      });
      const forAccept = await sign('buyer', 'release', key);
      await expect(fx.senders.actBySig(fx.wallets.relayer, { ...forAccept, action: 'cancel' })).rejects.toMatchObject({
        errorName: 'InvalidActionSignature',
      });
      expect(await state(key)).toBe('funded');
    });

    it('a reused nonce reverts ActionNonceReused, also on another escrow; an invalidated nonce cannot be used', async () => {
      const { relayer, seller } = fx.wallets;
      const a = await fx.escrowIn('funded');
      const b = await fx.escrowIn('funded');
      const nonce = hexlify(randomBytes(32));
      const first = await sign('seller', 'accept', a, { nonce });
      await fx.senders.actBySig(relayer, first);
      await expect(fx.senders.actBySig(relayer, first)).rejects.toMatchObject({ errorName: 'ActionNonceReused' });
      await expect(fx.senders.actBySig(relayer, await sign('seller', 'accept', b, { nonce }))).rejects.toMatchObject({ errorName: 'ActionNonceReused' });
      expect(await state(b)).toBe('funded');
      // The same nonce is still fresh for another actor.
      await fx.senders.actBySig(relayer, await sign('buyer', 'cancel', b, { nonce }));
      expect(await state(b)).toBe('cancelled');

      const c = await fx.escrowIn('funded');
      const pending = await sign('seller', 'accept', c);
      await (await fx.escrow.connect(seller).getFunction('invalidateActionNonce')(pending.nonce)).wait();
      await expect(fx.senders.actBySig(relayer, pending)).rejects.toMatchObject({ errorName: 'ActionNonceReused' });
      expect(await fx.escrow.actionNonceUsed(seller.address, pending.nonce)).toBe(true);
    });

    it('a past deadline reverts ActionExpired; a deadline over one hour ahead reverts ActionDeadlineTooFar', async () => {
      const key = await fx.escrowIn('funded');
      const now = await fx.now();
      const expired = await sign('buyer', 'cancel', key, { deadline: now - 1 });
      await expect(fx.senders.actBySig(fx.wallets.relayer, expired)).rejects.toMatchObject({ errorName: 'ActionExpired' });
      const tooFar = await sign('buyer', 'cancel', key, { deadline: now + MAX_ESCROW_ACTION_VALIDITY + 120 });
      await expect(fx.senders.actBySig(fx.wallets.relayer, tooFar)).rejects.toMatchObject({ errorName: 'ActionDeadlineTooFar' });

      // A signature valid when signed expires with chain time.
      const soon = await sign('buyer', 'cancel', key, { deadline: now + 60 });
      await fx.increaseTime(120);
      await expect(fx.senders.actBySig(fx.wallets.relayer, soon)).rejects.toMatchObject({ errorName: 'ActionExpired' });
      expect(await state(key)).toBe('funded');
      expect(await fx.escrow.actionNonceUsed(fx.wallets.buyer.address, soon.nonce)).toBe(false);
    });

    it('the local EscrowAction digest equals the contract escrowActionDigest', async () => {
      const key = hexlify(randomBytes(32));
      const signed = await sign('buyer', 'dispute', key);
      const onChain = await fx.escrow.escrowActionDigest(key, 5, signed.actor, signed.nonce, signed.deadline);
      const local = TypedDataEncoder.hash(fx.gateway.escrowDomain(fx.chainId), ESCROW_ACTION_TYPES, {
        escrowId: key,
        action: 5,
        actor: signed.actor,
        nonce: signed.nonce,
        deadline: signed.deadline,
      });
      expect(onChain).toBe(local);
    });
  });

  describe('voidTerms', () => {
    it('the terms signer burns an unfunded escrow id: its terms no longer fund (EscrowIdVoided), the id stays burned', async () => {
      const terms = await fx.terms();
      const sig = await fx.signTerms(terms);
      const tx = await fx.gateway.voidTerms(fx.wallets.termsSigner, terms.escrowKey);
      expect(await state(terms.escrowKey)).toBe('voided');
      const receipt = (await fx.provider.getTransactionReceipt(tx))!;
      const voided = receipt.logs.map((l) => fx.escrow.interface.parseLog(l)).find((l) => l?.name === 'TermsVoided');
      expect(voided?.args.toObject()).toMatchObject({ escrowId: terms.escrowKey, by: fx.wallets.termsSigner.address });
      const [b0] = await fx.balances(fx.wallets.buyer.address);
      await expect(fx.senders.fundWithTerms(fx.wallets.buyer, terms, sig)).rejects.toMatchObject({ errorName: 'EscrowIdVoided' });
      await expect(fx.gateway.voidTerms(fx.wallets.termsSigner, terms.escrowKey)).rejects.toMatchObject({ errorName: 'EscrowIdVoided' });
      expect(await fx.balances(fx.wallets.buyer.address)).toEqual([b0]);
      // The indexer's event stream is unchanged: TermsVoided is not an escrow party event.
      expect(fx.gateway.decodeLogs(receipt.logs)).toEqual([]);
    });

    it('a funded escrow cannot be voided (AlreadyFunded); nobody without VOIDER_ROLE may void (NotVoider)', async () => {
      const key = await fx.escrowIn('funded');
      await expect(fx.gateway.voidTerms(fx.wallets.termsSigner, key)).rejects.toMatchObject({ errorName: 'AlreadyFunded' });
      const fresh = (await fx.terms()).escrowKey;
      for (const who of ['buyer', 'seller', 'stranger', 'relayer', 'arbiter'] as const) {
        await expect(fx.gateway.voidTerms(fx.wallets[who], fresh)).rejects.toMatchObject({ errorName: 'NotVoider' });
      }
      const role = await fx.escrow.VOIDER_ROLE();
      await (await fx.escrow.connect(fx.wallets.deployer).getFunction('grantRole')(role, fx.wallets.relayer.address)).wait();
      await fx.gateway.voidTerms(fx.wallets.relayer, fresh);
      expect(await state(fresh)).toBe('voided');
    });
  });
});
