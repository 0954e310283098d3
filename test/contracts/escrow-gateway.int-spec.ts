import { randomUUID } from 'node:crypto';
import { Contract, Wallet, getAddress, hexlify, randomBytes } from 'ethers';
import { CheckoutEscrowArtifact, TestUSDCArtifact } from '@lib/contracts';
import {
  ANVIL_KEYS,
  ChainTxError,
  ChainVerificationError,
  codeMatches,
  createProvider,
  escrowKeyFromId,
  hasLocalContracts,
  idFromEscrowKey,
  probeChainId,
  startAnvil,
  type ChainVerificationReason,
} from '@lib/chain';
import { ChainFixture, DAY } from './chain-fixture';

describe('EscrowGateway (libs/chain) against anvil', () => {
  let fx: ChainFixture;

  beforeAll(async () => {
    fx = await ChainFixture.start();
  });
  afterAll(async () => {
    await fx?.stop();
  });

  const receipt = async (hash: string) => (await fx.provider.getTransactionReceipt(hash))!;
  const expectReason = (promise: Promise<unknown>, reason: ChainVerificationReason) =>
    expect(promise).rejects.toMatchObject({ name: 'ChainVerificationError', reason });

  describe('decodeLogs / getEscrowEvents', () => {
    it('decodes a full lifecycle into typed events and skips the token and admin logs', async () => {
      const { buyer, seller, arbiter, deployer, termsSigner } = fx.wallets;
      const from = (await fx.clock.headBlock()) + 1;
      const { key, terms, txHash: fundTx } = await fx.fund();
      const acceptTx = await fx.gateway.act(seller, 'accept', key);
      const deliverTx = await fx.gateway.act(seller, 'markDelivered', key);
      const disputeTx = await fx.gateway.act(buyer, 'dispute', key);
      const adminTx = await (await fx.escrow.connect(deployer).getFunction('setTermsSigner')(termsSigner.address)).wait();
      const resolveTx = await fx.gateway.resolve(arbiter, key, false);

      const fundReceipt = await receipt(fundTx);
      expect(fundReceipt.logs.length).toBeGreaterThan(1);
      const [funded, ...rest] = fx.gateway.decodeLogs(fundReceipt.logs);
      expect(rest).toEqual([]);
      const fundedLog = fundReceipt.logs.find((l) => l.address === fx.gateway.escrowAddress)!;
      expect(funded).toEqual({
        action: 'funded',
        escrowKey: key,
        buyer: buyer.address,
        seller: seller.address,
        amount: terms.amount,
        inspectionWindow: 3 * DAY,
        by: buyer.address,
        txHash: fundTx,
        logIndex: fundedLog.index,
        blockNumber: fundReceipt.blockNumber,
        blockHash: fundReceipt.blockHash,
      });
      expect(fx.gateway.decodeLogs(adminTx.logs)).toEqual([]);

      const deliveredAt = (await fx.gateway.getOnChainEscrow(key)).deliveredAt;
      const events = await fx.gateway.getEscrowEvents(from, await fx.clock.headBlock());
      expect(events.map((e) => [e.action, e.txHash])).toEqual([
        ['funded', fundTx],
        ['accepted', acceptTx],
        ['delivered', deliverTx],
        ['disputed', disputeTx],
        ['resolved', resolveTx],
      ]);
      expect(events[2]).toMatchObject({ autoReleaseAt: deliveredAt + 3 * DAY });
      expect(events[3]).toMatchObject({ by: buyer.address });
      expect(events[4]).toMatchObject({ toSeller: false });
      expect(events.every((e) => e.escrowKey === key)).toBe(true);
      expect(idFromEscrowKey(events[0].escrowKey)).toBe(idFromEscrowKey(key));
    });

    it('ignores escrow-shaped logs from any other address and removed logs', async () => {
      const { key, txHash } = await fx.fund();
      const logs = (await receipt(txHash)).logs;
      const escrowLog = logs.find((l) => l.address === fx.gateway.escrowAddress)!;
      const forged = { ...escrowLog, address: fx.usdcGateway.address, index: escrowLog.index, transactionHash: txHash };
      expect(fx.gateway.decodeLogs([forged])).toEqual([]);
      expect(fx.gateway.decodeLogs([{ ...forged, address: escrowLog.address, removed: true }])).toEqual([]);
      expect(fx.gateway.decodeLogs([{ ...forged, address: escrowLog.address.toLowerCase() }])).toEqual([
        expect.objectContaining({ action: 'funded', escrowKey: key }),
      ]);
    });

    it('getEscrowEvents from the deploy block starts with the first escrow funded in this file', async () => {
      const events = await fx.gateway.getEscrowEvents(fx.deployBlock, 'latest');
      expect(events.length).toBeGreaterThan(0);
      expect(events[0].action).toBe('funded');
      const sorted = [...events].sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
      expect(events).toEqual(sorted);
    });
  });

  describe('verifyActionTx (docs/architecture.md §7)', () => {
    it('returns the event, sender and block for a matching transaction; sender match ignores case', async () => {
      const { seller } = fx.wallets;
      const { key } = await fx.fund();
      const tx = await fx.gateway.act(seller, 'accept', key);
      const r = await receipt(tx);
      const verified = await fx.gateway.verifyActionTx(tx, {
        escrowKey: key.toUpperCase().replace('0X', '0x'),
        action: 'accepted',
        expectedSender: [fx.wallets.stranger.address, seller.address.toLowerCase()],
      });
      expect(verified).toEqual({
        event: expect.objectContaining({ action: 'accepted', escrowKey: key, txHash: tx, by: seller.address }),
        from: seller.address,
        by: seller.address,
        blockNumber: r.blockNumber,
        blockHash: r.blockHash,
      });
      await expect(fx.gateway.verifyActionTx(tx, { escrowKey: key, action: 'accepted' })).resolves.toMatchObject({ from: seller.address });
    });

    it('not_found: an unknown hash, or not a hash at all', async () => {
      const key = escrowKeyFromId(randomUUID());
      await expectReason(fx.gateway.verifyActionTx(hexlify(randomBytes(32)), { escrowKey: key, action: 'funded' }), 'not_found');
      await expectReason(fx.gateway.verifyActionTx('0x1234', { escrowKey: key, action: 'funded' }), 'not_found');
    });

    it('pending: known to the node but not mined; verifies once mined', async () => {
      const { key } = await fx.fund();
      const seller = fx.wallets.seller.connect(fx.provider);
      await fx.rpc('evm_setAutomine', [false]);
      try {
        const sent = await seller.sendTransaction({
          to: fx.gateway.escrowAddress,
          data: fx.escrow.interface.encodeFunctionData('accept', [key]),
          gasLimit: 200_000,
        });
        await expectReason(fx.gateway.verifyActionTx(sent.hash, { escrowKey: key, action: 'accepted' }), 'pending');
        await fx.rpc('evm_mine');
        await expect(fx.gateway.verifyActionTx(sent.hash, { escrowKey: key, action: 'accepted' })).resolves.toMatchObject({
          from: seller.address,
        });
      } finally {
        await fx.rpc('evm_setAutomine', [true]);
      }
    });

    it('failed: a reverted transaction (wrong actor, sent with a manual gas limit)', async () => {
      const { key } = await fx.fund();
      const sent = await fx.escrow.connect(fx.wallets.stranger).getFunction('accept')(key, { gasLimit: 200_000 });
      await expect(sent.wait()).rejects.toMatchObject({ code: 'CALL_EXCEPTION' });
      expect((await receipt(sent.hash)).status).toBe(0);
      await expectReason(fx.gateway.verifyActionTx(sent.hash, { escrowKey: key, action: 'accepted' }), 'failed');
      expect((await fx.gateway.getOnChainEscrow(key)).state).toBe('funded');
    });

    it('wrong_contract: a successful transaction to the USDC token (the approve of a funding)', async () => {
      const terms = await fx.terms();
      const approve = await (await fx.usdc.connect(fx.wallets.buyer).getFunction('approve')(fx.gateway.escrowAddress, terms.amount)).wait();
      await expectReason(fx.gateway.verifyActionTx(approve.hash, { escrowKey: terms.escrowKey, action: 'funded' }), 'wrong_contract');
    });

    it('wrong_escrow: the right action on another escrow', async () => {
      const a = await fx.fund();
      const b = await fx.fund();
      const tx = await fx.gateway.act(fx.wallets.seller, 'accept', a.key);
      await expectReason(fx.gateway.verifyActionTx(tx, { escrowKey: b.key, action: 'accepted' }), 'wrong_escrow');
    });

    it('wrong_action: another action on this escrow, or an escrow call that emits no escrow event', async () => {
      const { key } = await fx.fund();
      const tx = await fx.gateway.act(fx.wallets.seller, 'accept', key);
      await expectReason(fx.gateway.verifyActionTx(tx, { escrowKey: key, action: 'released' }), 'wrong_action');
      const admin = await (await fx.escrow.connect(fx.wallets.deployer).getFunction('setTermsSigner')(fx.wallets.termsSigner.address)).wait();
      await expectReason(fx.gateway.verifyActionTx(admin.hash, { escrowKey: key, action: 'accepted' }), 'wrong_action');
    });

    it('wrong_sender: the event is right but the sender is not an allowed party', async () => {
      const { key } = await fx.fund();
      const tx = await fx.gateway.act(fx.wallets.seller, 'accept', key);
      await expectReason(
        fx.gateway.verifyActionTx(tx, { escrowKey: key, action: 'accepted', expectedSender: [fx.wallets.buyer.address] }),
        'wrong_sender',
      );
      await expectReason(fx.gateway.verifyActionTx(tx, { escrowKey: key, action: 'accepted', expectedSender: [] }), 'wrong_sender');
    });

    it('throws ChainVerificationError instances carrying the tx hash and a readable message', async () => {
      const hash = hexlify(randomBytes(32));
      const err = await fx.gateway.verifyActionTx(hash, { escrowKey: escrowKeyFromId(randomUUID()), action: 'funded' }).catch((e) => e);
      expect(err).toBeInstanceOf(ChainVerificationError);
      expect(err).toMatchObject({ txHash: hash, message: expect.stringContaining(hash) });
    });
  });

  describe('reads and write helpers', () => {
    it('getOnChainEscrow of an unknown key is state none with zero fields', async () => {
      expect(await fx.gateway.getOnChainEscrow(escrowKeyFromId(randomUUID()))).toEqual({
        buyer: '0x0000000000000000000000000000000000000000',
        seller: '0x0000000000000000000000000000000000000000',
        amount: 0n,
        inspectionWindow: 0,
        deliveredAt: 0,
        state: 'none',
      });
    });

    it('headBlock and getBlockHash follow the node; a future block has no hash', async () => {
      const head = await fx.clock.headBlock();
      expect(head).toBe(await fx.provider.getBlockNumber());
      expect(await fx.clock.getBlockHash(head)).toBe((await fx.provider.getBlock(head))!.hash);
      expect(await fx.clock.getBlockHash(head + 1000)).toBeNull();
    });

    it('a refused write throws ChainTxError with the decoded custom error and no tx hash', async () => {
      const { key } = await fx.fund();
      const err = await fx.gateway.act(fx.wallets.buyer, 'accept', key).catch((e) => e);
      expect(err).toBeInstanceOf(ChainTxError);
      expect(err).toMatchObject({ errorName: 'NotSeller', errorArgs: [], txHash: null, message: 'accept: NotSeller()' });
      await expect(fx.gateway.act(fx.wallets.seller, 'bogus' as never, key)).rejects.toBeInstanceOf(TypeError);
    });

    it('concurrent writes from one wallet get consecutive nonces', async () => {
      const escrows = await Promise.all([fx.fund(), fx.fund(), fx.fund()]).catch(async () => {
        throw new Error('concurrent funding from one buyer failed');
      });
      const hashes = await Promise.all(escrows.map(({ key }) => fx.gateway.act(fx.wallets.seller, 'accept', key)));
      const nonces = await Promise.all(hashes.map(async (h) => (await fx.provider.getTransaction(h))!.nonce));
      expect(new Set(nonces).size).toBe(3);
      for (const { key } of escrows) expect((await fx.gateway.getOnChainEscrow(key)).state).toBe('accepted');
    });

    it('a signed relay transaction can be stored and broadcast twice without funding twice (docs/architecture.md §5)', async () => {
      const { relayer, buyer2 } = fx.wallets;
      const terms = await fx.terms({ buyer: buyer2.address });
      const auth = await fx.gateway.signReceiveAuthorization(buyer2, terms);
      const signed = await fx.senders.signFundWithAuthorizationTx(relayer, terms, await fx.signTerms(terms), auth);
      expect(await fx.provider.getTransaction(signed.txHash)).toBeNull();
      const [b0] = await fx.balances(buyer2.address);

      expect(await fx.senders.broadcastSignedTx(signed.rawTx)).toBe(signed.txHash);
      expect(await fx.senders.broadcastSignedTx(signed.rawTx)).toBe(signed.txHash);
      expect(await fx.balances(buyer2.address)).toEqual([b0 - terms.amount]);
      await expect(
        fx.gateway.verifyActionTx(signed.txHash, { escrowKey: terms.escrowKey, action: 'funded', expectedSender: [buyer2.address] }),
      ).resolves.toMatchObject({ event: { action: 'funded', buyer: buyer2.address }, from: relayer.address, by: buyer2.address });
    });

    it('authorizationFromSignature rejects a signature by someone other than `from`', async () => {
      const terms = await fx.terms({ buyer: fx.wallets.buyer2.address });
      const request = await fx.gateway.receiveAuthorizationRequest(fx.wallets.buyer2.address, terms);
      expect(request.domain).toEqual({ name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: fx.usdcGateway.address });
      expect(request.message.nonce).toBe(fx.gateway.fundingTermsDigest(terms, fx.chainId));
      expect(request.message.validBefore).toBe(BigInt(terms.deadline) + 1n);
      const bySomeoneElse = await fx.wallets.stranger.signTypedData(request.domain, request.types, request.message);
      expect(() => fx.gateway.authorizationFromSignature(request, bySomeoneElse)).toThrow(TypeError);
      const byBuyer = await fx.wallets.buyer2.signTypedData(request.domain, request.types, request.message);
      expect(fx.gateway.authorizationFromSignature(request, byBuyer)).toMatchObject({ from: fx.wallets.buyer2.address, signature: byBuyer });
    });
  });

  describe('local chain helpers', () => {
    it('ANVIL_KEYS are the accounts anvil funds', async () => {
      const accounts = await fx.rpc<string[]>('eth_accounts');
      expect(accounts.map((a) => getAddress(a))).toEqual(ANVIL_KEYS.map((k) => new Wallet(k).address));
    });

    it('hasLocalContracts recognises this build’s code and nothing else', async () => {
      const { escrowAddress } = fx.gateway;
      const usdcAddress = fx.usdcGateway.address;
      expect(await hasLocalContracts(fx.provider, { usdcAddress, escrowAddress })).toBe(true);
      expect(await hasLocalContracts(fx.provider, { usdcAddress: escrowAddress, escrowAddress: usdcAddress })).toBe(false);
      expect(await hasLocalContracts(fx.provider, { usdcAddress, escrowAddress: fx.wallets.buyer.address })).toBe(false);
      const escrowCode = await fx.provider.getCode(escrowAddress);
      expect(codeMatches(escrowCode, CheckoutEscrowArtifact)).toBe(true);
      expect(codeMatches(escrowCode.replace(/..$/, '00'), CheckoutEscrowArtifact)).toBe(escrowCode.endsWith('00'));
      expect(codeMatches(await fx.provider.getCode(usdcAddress), TestUSDCArtifact)).toBe(true);
      // The ABI of this build drives the deployed code: its view `usdc()` names the token contract.
      const escrow = new Contract(escrowAddress, CheckoutEscrowArtifact.abi, fx.provider);
      expect(getAddress(await escrow.getFunction('usdc')())).toBe(getAddress(usdcAddress));
    });

    it('startAnvil on a given port answers chain id 31337 and stop() ends it', async () => {
      const other = await startAnvil();
      try {
        expect(await probeChainId(other.rpcUrl)).toBe(31337);
        expect(other.rpcUrl).toBe(`http://127.0.0.1:${other.port}`);
      } finally {
        await other.stop();
      }
      expect(await probeChainId(other.rpcUrl, 300)).toBeNull();
      await expect(other.exited).resolves.not.toBe(undefined);
    });

    it('waitForTransaction finds a transaction mined between its head read and its receipt read (no block event needed)', async () => {
      const provider = createProvider(fx.anvil.rpcUrl, 31337, { pollingIntervalMs: 50 });
      try {
        const before = await provider.getBlockNumber();
        const tx = await fx.wallets.buyer.connect(provider).sendTransaction({ to: fx.wallets.seller.address, value: 1n });
        const mined = (await provider.getTransactionReceipt(tx.hash)) ?? (await fx.rpc('evm_mine'), await provider.getTransactionReceipt(tx.hash));
        expect(mined!.blockNumber).toBe(before + 1);
        // The race: the head is read before the block that mines it (stale once), the receipt after. ethers'
        // own wait then waited for a "block" event whose poller starts from the new head without emitting it:
        // on anvil's automine no further block came and the wait never ended.
        const head = provider.getBlockNumber.bind(provider);
        let stale = true;
        provider.getBlockNumber = async () => (stale ? ((stale = false), before) : head());
        const receipt = await provider.waitForTransaction(tx.hash, 1, 5_000);
        expect(receipt!.hash).toBe(tx.hash);
      } finally {
        provider.destroy();
      }
    });

    it('startAnvil refuses a port that is already taken', async () => {
      await expect(startAnvil({ port: fx.anvil.port, readyTimeoutMs: 3000 })).rejects.toThrow(/anvil/);
    });
  });
});
