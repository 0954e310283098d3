import { Contract, ContractFactory, Signature, TypedDataEncoder, hexlify, randomBytes, type Wallet } from 'ethers';
import { TestSmartWalletArtifact, TestUSDCArtifact } from '@lib/contracts';
import { RECEIVE_WITH_AUTHORIZATION_TYPES, TRANSFER_WITH_AUTHORIZATION_TYPES } from '@lib/chain';
import { ChainFixture, USDC } from './chain-fixture';

/**
 * TestUSDC behaves like Circle's FiatToken v2.2 where it changes our outcomes (DESIGN §18): blacklist, pause,
 * ERC-1271 signatures in EIP-3009; and what that means for an escrow (docs/decisions.md).
 */
describe('TestUSDC as FiatToken v2.2 (blacklist, pause, ERC-1271) and the escrow outcomes', () => {
  let fx: ChainFixture;
  let domain: { name: string; version: string; chainId: number; verifyingContract: string };

  beforeAll(async () => {
    fx = await ChainFixture.start();
    domain = { name: 'USD Coin', version: '2', chainId: fx.chainId, verifyingContract: fx.usdcGateway.address };
  });
  afterAll(async () => {
    await fx?.stop();
  });

  const usdcAs = (w: Wallet) => fx.usdc.connect(w);
  const mined = async (p: Promise<{ wait(): Promise<unknown> }>) => (await p).wait();
  const asOwner = () => usdcAs(fx.wallets.deployer);
  const BLACKLISTED = 'Blacklistable: account is blacklisted';
  const PAUSED = 'Pausable: paused';

  const signTransfer = async (from: Wallet, to: string, value: bigint, signer: Wallet = from, fromAddress = from.address) => {
    const message = {
      from: fromAddress,
      to,
      value,
      validAfter: 0n,
      validBefore: BigInt(await fx.now()) + 600n,
      nonce: hexlify(randomBytes(32)),
    };
    const sig = Signature.from(await signer.signTypedData(domain, TRANSFER_WITH_AUTHORIZATION_TYPES, message));
    return [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, sig.v, sig.r, sig.s] as const;
  };

  describe('roles', () => {
    it('the deployer holds owner, pauser and blacklister; nobody else may pause or blacklist', async () => {
      const { deployer, stranger } = fx.wallets;
      expect(await fx.usdc.owner()).toBe(deployer.address);
      expect(await fx.usdc.pauser()).toBe(deployer.address);
      expect(await fx.usdc.blacklister()).toBe(deployer.address);
      await expect(usdcAs(stranger).getFunction('pause').staticCall()).rejects.toMatchObject({ reason: 'Pausable: caller is not the pauser' });
      await expect(usdcAs(stranger).getFunction('blacklist').staticCall(stranger.address)).rejects.toMatchObject({
        reason: 'Blacklistable: caller is not the blacklister',
      });
      await expect(usdcAs(stranger).getFunction('updatePauser').staticCall(stranger.address)).rejects.toMatchObject({
        reason: 'Ownable: caller is not the owner',
      });
    });
  });

  describe('blacklist', () => {
    afterEach(async () => {
      for (const w of [fx.wallets.stranger, fx.wallets.seller]) {
        if (await fx.usdc.isBlacklisted(w.address)) await mined(asOwner().getFunction('unBlacklist')(w.address));
      }
    });

    it('transfers from or to a listed address revert, by transfer, transferFrom and EIP-3009; unlisting restores them', async () => {
      const { buyer, stranger, seller } = fx.wallets;
      await mined(usdcAs(stranger).getFunction('mint')(stranger.address, 10n * USDC));
      await mined(asOwner().getFunction('blacklist')(stranger.address));
      expect(await fx.usdc.isBlacklisted(stranger.address)).toBe(true);

      await expect(usdcAs(stranger).getFunction('transfer').staticCall(seller.address, 1n)).rejects.toMatchObject({ reason: BLACKLISTED });
      await expect(usdcAs(buyer).getFunction('transfer').staticCall(stranger.address, 1n)).rejects.toMatchObject({ reason: BLACKLISTED });
      await expect(usdcAs(buyer).getFunction('approve').staticCall(stranger.address, 1n)).rejects.toMatchObject({ reason: BLACKLISTED });
      await mined(usdcAs(buyer).getFunction('approve')(seller.address, 5n));
      await expect(usdcAs(seller).getFunction('transferFrom').staticCall(buyer.address, stranger.address, 1n)).rejects.toMatchObject({
        reason: BLACKLISTED,
      });
      const toListed = await signTransfer(buyer, stranger.address, 1n);
      await expect(usdcAs(seller).getFunction('transferWithAuthorization').staticCall(...toListed)).rejects.toMatchObject({
        reason: BLACKLISTED,
      });
      const fromListed = await signTransfer(stranger, seller.address, 1n);
      await expect(usdcAs(seller).getFunction('transferWithAuthorization').staticCall(...fromListed)).rejects.toMatchObject({
        reason: BLACKLISTED,
      });
      const receive = {
        from: stranger.address,
        to: seller.address,
        value: 1n,
        validAfter: 0n,
        validBefore: BigInt(await fx.now()) + 600n,
        nonce: hexlify(randomBytes(32)),
      };
      const rsig = Signature.from(await stranger.signTypedData(domain, RECEIVE_WITH_AUTHORIZATION_TYPES, receive));
      await expect(
        usdcAs(seller)
          .getFunction('receiveWithAuthorization')
          .staticCall(receive.from, receive.to, receive.value, receive.validAfter, receive.validBefore, receive.nonce, rsig.v, rsig.r, rsig.s),
      ).rejects.toMatchObject({ reason: BLACKLISTED });

      await mined(asOwner().getFunction('unBlacklist')(stranger.address));
      const [s0] = await fx.balances(seller.address);
      await mined(usdcAs(seller).getFunction('transferWithAuthorization')(...fromListed));
      expect(await fx.balances(seller.address)).toEqual([s0 + 1n]);
    });

    it('a seller blacklisted before release: release reverts and the escrow stays delivered; a dispute and the arbiter refund the buyer', async () => {
      const { buyer, seller, arbiter } = fx.wallets;
      const key = await fx.escrowIn('delivered');
      const { amount } = await fx.gateway.getOnChainEscrow(key);
      await mined(asOwner().getFunction('blacklist')(seller.address));

      await expect(fx.gateway.act(buyer, 'release', key)).rejects.toMatchObject({ errorName: 'Error', errorArgs: [BLACKLISTED] });
      await fx.increaseTime(30 * 86_400);
      await expect(fx.gateway.act(fx.wallets.stranger, 'release', key)).rejects.toMatchObject({ errorArgs: [BLACKLISTED] });
      expect((await fx.gateway.getOnChainEscrow(key)).state).toBe('delivered');

      const [buyer0, escrow0] = await fx.balances(buyer.address, fx.gateway.escrowAddress);
      await fx.gateway.act(buyer, 'dispute', key);
      await expect(fx.gateway.resolve(arbiter, key, true)).rejects.toMatchObject({ errorArgs: [BLACKLISTED] });
      await fx.gateway.resolve(arbiter, key, false);
      expect((await fx.gateway.getOnChainEscrow(key)).state).toBe('refunded');
      expect(await fx.balances(buyer.address, fx.gateway.escrowAddress)).toEqual([buyer0 + amount, escrow0 - amount]);
    });

    it('a seller blacklisted while the escrow is only funded: the buyer cancels (the money was never the seller’s)', async () => {
      const { buyer, seller } = fx.wallets;
      const key = await fx.escrowIn('funded');
      await mined(asOwner().getFunction('blacklist')(seller.address));
      await expect(fx.gateway.act(buyer, 'release', key)).rejects.toMatchObject({ errorArgs: [BLACKLISTED] });
      await fx.gateway.act(buyer, 'cancel', key);
      expect((await fx.gateway.getOnChainEscrow(key)).state).toBe('cancelled');
    });
  });

  describe('pause', () => {
    afterEach(async () => {
      if (await fx.usdc.paused()) await mined(asOwner().getFunction('unpause')());
    });

    it('every transfer, approval and authorization reverts while paused; the same signed authorization succeeds after unpause', async () => {
      const { buyer, seller, relayer } = fx.wallets;
      await mined(asOwner().getFunction('pause')());
      expect(await fx.usdc.paused()).toBe(true);
      await expect(usdcAs(buyer).getFunction('transfer').staticCall(seller.address, 1n)).rejects.toMatchObject({ reason: PAUSED });
      await expect(usdcAs(buyer).getFunction('approve').staticCall(seller.address, 1n)).rejects.toMatchObject({ reason: PAUSED });
      const auth = await signTransfer(buyer, seller.address, 2n * USDC);
      await expect(usdcAs(relayer).getFunction('transferWithAuthorization').staticCall(...auth)).rejects.toMatchObject({ reason: PAUSED });
      expect(await fx.usdc.authorizationState(buyer.address, auth[5])).toBe(false);

      const terms = await fx.terms({ buyer: fx.wallets.buyer2.address });
      const sig = await fx.signTerms(terms);
      const fundingAuth = await fx.gateway.signReceiveAuthorization(fx.wallets.buyer2, terms);
      await expect(fx.senders.submitFundWithAuthorization(relayer, terms, sig, fundingAuth)).rejects.toMatchObject({
        errorArgs: [PAUSED],
      });

      await mined(asOwner().getFunction('unpause')());
      const [s0] = await fx.balances(seller.address);
      await mined(usdcAs(relayer).getFunction('transferWithAuthorization')(...auth));
      expect(await fx.balances(seller.address)).toEqual([s0 + 2n * USDC]);
      await fx.senders.submitFundWithAuthorization(relayer, terms, sig, fundingAuth);
      expect((await fx.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('funded');
    });
  });

  describe('ERC-1271 in EIP-3009', () => {
    let wallet: Contract;

    beforeAll(async () => {
      const { deployer, stranger } = fx.wallets;
      const factory = new ContractFactory(TestSmartWalletArtifact.abi, TestSmartWalletArtifact.bytecode, deployer);
      wallet = (await (await factory.deploy(stranger.address)).waitForDeployment()) as Contract;
      await mined(usdcAs(deployer).getFunction('mint')(await wallet.getAddress(), 50n * USDC));
    });

    it("a contract wallet's authorization, approved by its isValidSignature, moves its USDC", async () => {
      const { stranger, seller, relayer } = fx.wallets;
      const walletAddress = await wallet.getAddress();
      const auth = await signTransfer(stranger, seller.address, 3n * USDC, stranger, walletAddress);
      const [w0, s0] = await fx.balances(walletAddress, seller.address);
      await mined(usdcAs(relayer).getFunction('transferWithAuthorization')(...auth));
      expect(await fx.balances(walletAddress, seller.address)).toEqual([w0 - 3n * USDC, s0 + 3n * USDC]);
      expect(await fx.usdc.authorizationState(walletAddress, auth[5])).toBe(true);
    });

    it('a signature the wallet does not approve is refused', async () => {
      const { buyer, seller, relayer } = fx.wallets;
      const walletAddress = await wallet.getAddress();
      const auth = await signTransfer(buyer, seller.address, 1n * USDC, buyer, walletAddress);
      await expect(usdcAs(relayer).getFunction('transferWithAuthorization').staticCall(...auth)).rejects.toMatchObject({
        revert: { name: 'InvalidAuthorizationSignature' },
      });
    });
  });

  describe('EIP-712 domain', () => {
    it('a token deployed with ("USDC", "2") reports that domain through eip712Domain() and DOMAIN_SEPARATOR()', async () => {
      const factory = new ContractFactory(TestUSDCArtifact.abi, TestUSDCArtifact.bytecode, fx.wallets.deployer);
      const token = (await (await factory.deploy('USDC', '2')).waitForDeployment()) as Contract;
      const address = await token.getAddress();
      const reported = await token.eip712Domain();
      expect([reported[1], reported[2], reported[3], reported[4]]).toEqual(['USDC', '2', BigInt(fx.chainId), address]);
      expect(await token.version()).toBe('2');
      expect(await token.DOMAIN_SEPARATOR()).toBe(
        TypedDataEncoder.hashDomain({ name: 'USDC', version: '2', chainId: fx.chainId, verifyingContract: address }),
      );
    });
  });
});
