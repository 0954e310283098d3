import { Signature, TypedDataEncoder, hexlify, id, randomBytes } from 'ethers';
import { RECEIVE_WITH_AUTHORIZATION_TYPES, TRANSFER_WITH_AUTHORIZATION_TYPES } from '@lib/chain';
import { ChainFixture, USDC } from './chain-fixture';

const PERMIT_TYPES = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
};

describe('TestUSDC (USDC FiatTokenV2 surface: EIP-2612, EIP-3009)', () => {
  let fx: ChainFixture;
  let domain: { name: string; version: string; chainId: number; verifyingContract: string };

  beforeAll(async () => {
    fx = await ChainFixture.start();
    domain = { name: 'USD Coin', version: '2', chainId: fx.chainId, verifyingContract: fx.usdcGateway.address };
  });
  afterAll(async () => {
    await fx?.stop();
  });

  const usdcAs = (w: keyof ChainFixture['wallets']) => fx.usdc.connect(fx.wallets[w]);
  const mined = async (p: Promise<{ wait(): Promise<unknown> }>) => (await p).wait();

  it('is "USD Coin" / "USDC" with 6 decimals and EIP-712 domain ("USD Coin", "2")', async () => {
    expect(await fx.usdc.name()).toBe('USD Coin');
    expect(await fx.usdc.symbol()).toBe('USDC');
    expect(await fx.usdc.decimals()).toBe(6n);
    expect(await fx.usdc.version()).toBe('2');
    expect(await fx.usdc.DOMAIN_SEPARATOR()).toBe(TypedDataEncoder.hashDomain(domain));
  });

  it('uses the EIP-3009 / FiatTokenV2 typehashes', async () => {
    expect(await fx.usdc.TRANSFER_WITH_AUTHORIZATION_TYPEHASH()).toBe('0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267');
    expect(await fx.usdc.RECEIVE_WITH_AUTHORIZATION_TYPEHASH()).toBe('0xd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de8');
    expect(await fx.usdc.CANCEL_AUTHORIZATION_TYPEHASH()).toBe('0x158b0a9edf7a828aad02f63cd515c68ef2f50ba807396f6d12842833a1597429');
    expect(await fx.usdc.PERMIT_TYPEHASH()).toBe(id('Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)'));
  });

  it('mint is open (local test token)', async () => {
    const { stranger } = fx.wallets;
    const before = await fx.usdcGateway.balanceOf(stranger.address);
    await mined(usdcAs('stranger').getFunction('mint')(stranger.address, 5n * USDC));
    expect(await fx.usdcGateway.balanceOf(stranger.address)).toBe(before + 5n * USDC);
  });

  describe('EIP-2612 permit', () => {
    const signPermit = async (value: bigint, deadline: bigint, nonce?: bigint) => {
      const { buyer, relayer } = fx.wallets;
      const n = nonce ?? ((await fx.usdc.nonces(buyer.address)) as bigint);
      const sig = Signature.from(
        await buyer.signTypedData(domain, PERMIT_TYPES, { owner: buyer.address, spender: relayer.address, value, nonce: n, deadline }),
      );
      return [buyer.address, relayer.address, value, deadline, sig.v, sig.r, sig.s] as const;
    };

    it('a signed permit sets the allowance, bumps the nonce and cannot be replayed', async () => {
      const { buyer, relayer } = fx.wallets;
      const nonce0 = (await fx.usdc.nonces(buyer.address)) as bigint;
      const args = await signPermit(42n * USDC, BigInt(await fx.now()) + 600n);
      await mined(usdcAs('stranger').getFunction('permit')(...args));
      expect(await fx.usdc.allowance(buyer.address, relayer.address)).toBe(42n * USDC);
      expect(await fx.usdc.nonces(buyer.address)).toBe(nonce0 + 1n);
      await expect(usdcAs('stranger').getFunction('permit').staticCall(...args)).rejects.toMatchObject({
        revert: { name: 'ERC2612InvalidSigner' },
      });
    });

    it('a permit for the escrow lets the buyer fund without an approve transaction', async () => {
      const { buyer } = fx.wallets;
      const terms = await fx.terms();
      const nonce = (await fx.usdc.nonces(buyer.address)) as bigint;
      const deadline = BigInt(await fx.now()) + 600n;
      const sig = Signature.from(
        await buyer.signTypedData(domain, PERMIT_TYPES, {
          owner: buyer.address,
          spender: fx.gateway.escrowAddress,
          value: terms.amount,
          nonce,
          deadline,
        }),
      );
      await mined(usdcAs('relayer').getFunction('permit')(buyer.address, fx.gateway.escrowAddress, terms.amount, deadline, sig.v, sig.r, sig.s));
      const txCount = await fx.provider.getTransactionCount(buyer.address);
      await fx.senders.fundWithTerms(buyer, terms, await fx.signTerms(terms));
      expect(await fx.provider.getTransactionCount(buyer.address)).toBe(txCount + 1);
      expect((await fx.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('funded');
      expect(await fx.usdc.allowance(buyer.address, fx.gateway.escrowAddress)).toBe(0n);
    });

    it('an expired permit is refused', async () => {
      const args = await signPermit(1n, BigInt(await fx.now()) - 1n);
      await expect(usdcAs('stranger').getFunction('permit').staticCall(...args)).rejects.toMatchObject({
        revert: { name: 'ERC2612ExpiredSignature' },
      });
    });
  });

  describe('EIP-3009', () => {
    const signTransfer = async (value: bigint, validity: { validAfter?: bigint; validBefore?: bigint } = {}) => {
      const { buyer, seller } = fx.wallets;
      const message = {
        from: buyer.address,
        to: seller.address,
        value,
        validAfter: validity.validAfter ?? 0n,
        validBefore: validity.validBefore ?? BigInt(await fx.now()) + 600n,
        nonce: hexlify(randomBytes(32)),
      };
      const sig = Signature.from(await buyer.signTypedData(domain, TRANSFER_WITH_AUTHORIZATION_TYPES, message));
      const args = [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, sig.v, sig.r, sig.s] as const;
      return { message, args };
    };

    it('transferWithAuthorization: anyone submits, funds move, AuthorizationUsed is emitted, the nonce is spent', async () => {
      const { buyer, seller } = fx.wallets;
      const [b0, s0] = await fx.balances(buyer.address, seller.address);
      const { message, args } = await signTransfer(7n * USDC);
      expect(await fx.usdc.authorizationState(buyer.address, message.nonce)).toBe(false);
      const receipt = (await mined(usdcAs('stranger').getFunction('transferWithAuthorization')(...args))) as {
        logs: Array<{ topics: string[]; data: string }>;
      };
      expect(await fx.balances(buyer.address, seller.address)).toEqual([b0 - 7n * USDC, s0 + 7n * USDC]);
      expect(await fx.usdc.authorizationState(buyer.address, message.nonce)).toBe(true);
      const names = receipt.logs.map((l) => fx.usdc.interface.parseLog(l)?.name);
      expect(names).toEqual(expect.arrayContaining(['AuthorizationUsed', 'Transfer']));

      await expect(usdcAs('stranger').getFunction('transferWithAuthorization').staticCall(...args)).rejects.toMatchObject({
        revert: { name: 'AuthorizationUsedOrCanceled' },
      });
    });

    it('an authorization outside its validity window is refused', async () => {
      const now = BigInt(await fx.now());
      const expired = await signTransfer(1n, { validBefore: now });
      await expect(usdcAs('stranger').getFunction('transferWithAuthorization').staticCall(...expired.args)).rejects.toMatchObject({
        revert: { name: 'AuthorizationExpired' },
      });
      const early = await signTransfer(1n, { validAfter: now + 600n, validBefore: now + 1200n });
      await expect(usdcAs('stranger').getFunction('transferWithAuthorization').staticCall(...early.args)).rejects.toMatchObject({
        revert: { name: 'AuthorizationNotYetValid' },
      });
    });

    it('a tampered value fails the signature check', async () => {
      const { args } = await signTransfer(1n * USDC);
      const tampered = [...args] as unknown[];
      tampered[2] = 2n * USDC;
      await expect(usdcAs('stranger').getFunction('transferWithAuthorization').staticCall(...tampered)).rejects.toMatchObject({
        revert: { name: 'InvalidAuthorizationSignature' },
      });
    });

    it('cancelAuthorization spends the nonce (AuthorizationCanceled) so the transfer can no longer run', async () => {
      const { buyer } = fx.wallets;
      const { message, args } = await signTransfer(1n * USDC);
      const cancel = Signature.from(
        await buyer.signTypedData(
          domain,
          { CancelAuthorization: [{ name: 'authorizer', type: 'address' }, { name: 'nonce', type: 'bytes32' }] },
          { authorizer: buyer.address, nonce: message.nonce },
        ),
      );
      const receipt = (await mined(
        usdcAs('stranger').getFunction('cancelAuthorization')(buyer.address, message.nonce, cancel.v, cancel.r, cancel.s),
      )) as { logs: Array<{ topics: string[]; data: string }> };
      expect(receipt.logs.map((l) => fx.usdc.interface.parseLog(l)?.name)).toEqual(['AuthorizationCanceled']);
      expect(await fx.usdc.authorizationState(buyer.address, message.nonce)).toBe(true);
      await expect(usdcAs('stranger').getFunction('transferWithAuthorization').staticCall(...args)).rejects.toMatchObject({
        revert: { name: 'AuthorizationUsedOrCanceled' },
      });
      await expect(
        usdcAs('stranger').getFunction('cancelAuthorization').staticCall(buyer.address, message.nonce, cancel.v, cancel.r, cancel.s),
      ).rejects.toMatchObject({ revert: { name: 'AuthorizationUsedOrCanceled' } });
    });

    it('receiveWithAuthorization only by the payee', async () => {
      const { buyer, seller } = fx.wallets;
      const message = {
        from: buyer.address,
        to: seller.address,
        value: 3n * USDC,
        validAfter: 0n,
        validBefore: BigInt(await fx.now()) + 600n,
        nonce: hexlify(randomBytes(32)),
      };
      const sig = Signature.from(await buyer.signTypedData(domain, RECEIVE_WITH_AUTHORIZATION_TYPES, message));
      const args = [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, sig.v, sig.r, sig.s] as const;
      await expect(usdcAs('stranger').getFunction('receiveWithAuthorization').staticCall(...args)).rejects.toMatchObject({
        revert: { name: 'CallerMustBePayee' },
      });
      const [s0] = await fx.balances(seller.address);
      await mined(usdcAs('seller').getFunction('receiveWithAuthorization')(...args));
      expect(await fx.balances(seller.address)).toEqual([s0 + 3n * USDC]);
    });

    it('a TransferWithAuthorization signature is not valid as ReceiveWithAuthorization (distinct typehashes)', async () => {
      const { args } = await signTransfer(1n * USDC);
      await expect(usdcAs('seller').getFunction('receiveWithAuthorization').staticCall(...args)).rejects.toMatchObject({
        revert: { name: 'InvalidAuthorizationSignature' },
      });
    });
  });
});
