import { randomUUID } from 'node:crypto';
import { Contract, Wallet, type JsonRpcProvider } from 'ethers';
import { CheckoutEscrowArtifact, TestUSDCArtifact } from '@lib/contracts';
import {
  ANVIL_CHAIN_ID,
  ANVIL_KEYS,
  ANVIL_ROLES,
  connectChain,
  type ChainGateways,
  createProvider,
  type ChainClock,
  type EscrowGateway,
  type UsdcGateway,
  deployLocalContracts,
  escrowKeyFromId,
  startAnvil,
  type AnvilInstance,
  type EscrowState,
  type FundingTerms,
} from '@lib/chain';
import { EscrowTestSenders } from '../../libs/chain/src/testing';

/** 1 USDC in base units. */
export const USDC = 10n ** 6n;
/** One day in seconds. */
export const DAY = 86_400;

/**
 * A private anvil with freshly deployed TestUSDC + CheckoutEscrow for one spec file (random port),
 * named wallets from ANVIL_ROLES plus `stranger` (key 6) and `buyer2` (key 7), and helpers to build,
 * sign and fund terms and to drive an escrow into any state.
 */
export class ChainFixture {
  readonly wallets: Record<'deployer' | 'termsSigner' | 'relayer' | 'arbiter' | 'buyer' | 'seller' | 'stranger' | 'buyer2', Wallet>;
  readonly usdc: Contract;
  readonly escrow: Contract;
  readonly chainId = ANVIL_CHAIN_ID;
  readonly gateway: EscrowGateway;
  readonly usdcGateway: UsdcGateway;
  readonly clock: ChainClock;
  /** Test-only escrow senders (funding from a wallet, relayed actions). */
  readonly senders: EscrowTestSenders;

  private constructor(
    readonly anvil: AnvilInstance,
    readonly provider: JsonRpcProvider,
    chain: ChainGateways,
    readonly deployBlock: number,
  ) {
    this.gateway = chain.escrow;
    this.usdcGateway = chain.usdc;
    this.clock = chain.clock;
    this.senders = new EscrowTestSenders(chain.escrow);
    const w = (i: number) => new Wallet(ANVIL_KEYS[i], provider);
    this.wallets = {
      deployer: w(ANVIL_ROLES.deployer),
      termsSigner: w(ANVIL_ROLES.termsSigner),
      relayer: w(ANVIL_ROLES.relayer),
      arbiter: w(ANVIL_ROLES.arbiter),
      buyer: w(ANVIL_ROLES.demoBuyer),
      seller: w(ANVIL_ROLES.demoSeller),
      stranger: w(6),
      buyer2: w(7),
    };
    this.usdc = new Contract(chain.usdc.address, TestUSDCArtifact.abi, provider);
    this.escrow = new Contract(chain.escrow.escrowAddress, CheckoutEscrowArtifact.abi, provider);
  }

  static async start(): Promise<ChainFixture> {
    const anvil = await startAnvil();
    const provider = createProvider(anvil.rpcUrl, ANVIL_CHAIN_ID, { pollingIntervalMs: 50 });
    const address = (i: number) => new Wallet(ANVIL_KEYS[i]).address;
    const deployed = await deployLocalContracts({
      provider,
      deployerKey: ANVIL_KEYS[ANVIL_ROLES.deployer],
      termsSigner: address(ANVIL_ROLES.termsSigner),
      arbiter: address(ANVIL_ROLES.arbiter),
      mint: [
        { to: address(ANVIL_ROLES.demoBuyer), amount: 1_000_000n * USDC },
        { to: address(7), amount: 1_000_000n * USDC },
      ],
    });
    return new ChainFixture(anvil, provider, connectChain(provider, deployed), deployed.deployBlock);
  }

  async stop(): Promise<void> {
    this.provider.destroy();
    await this.anvil.stop();
  }

  rpc<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    return this.provider.send(method, params) as Promise<T>;
  }

  snapshot(): Promise<string> {
    return this.rpc<string>('evm_snapshot');
  }

  async revert(id: string): Promise<void> {
    if (!(await this.rpc<boolean>('evm_revert', [id]))) throw new Error(`evm_revert ${id} failed`);
  }

  async increaseTime(seconds: number): Promise<void> {
    await this.rpc('evm_increaseTime', [seconds]);
    await this.rpc('evm_mine');
  }

  now(): Promise<number> {
    return this.clock.headTimestamp();
  }

  /** Fresh terms bound to the default buyer (`wallets.buyer`) unless `overrides.buyer` says otherwise. */
  async terms(overrides: Partial<FundingTerms> = {}): Promise<FundingTerms> {
    return {
      escrowKey: escrowKeyFromId(randomUUID()),
      buyer: this.wallets.buyer.address,
      seller: this.wallets.seller.address,
      amount: 125n * USDC + 500_000n,
      inspectionWindow: 3 * DAY,
      deadline: (await this.now()) + 3600,
      ...overrides,
    };
  }

  signTerms(terms: FundingTerms, signer: Wallet = this.wallets.termsSigner, chainId: number = this.chainId): Promise<string> {
    return this.gateway.signFundingTerms(signer, terms, chainId);
  }

  /** Builds, signs and funds terms (approve + fund) from `buyer`. */
  async fund(overrides: Partial<FundingTerms> = {}, buyer: Wallet = this.wallets.buyer) {
    const terms = await this.terms({ buyer: buyer.address, ...overrides });
    const txHash = await this.senders.fundWithTerms(buyer, terms, await this.signTerms(terms));
    return { terms, key: terms.escrowKey, txHash };
  }

  /** A fresh escrow (buyer, seller) driven into `state` by the allowed actors. */
  async escrowIn(state: Exclude<EscrowState, 'none'>): Promise<string> {
    const { buyer, seller } = this.wallets;
    const { key } = await this.fund();
    const g = this.gateway;
    switch (state) {
      case 'funded':
        break;
      case 'accepted':
        await g.act(seller, 'accept', key);
        break;
      case 'delivered':
        await g.act(seller, 'accept', key);
        await g.act(seller, 'markDelivered', key);
        break;
      case 'released':
        await g.act(buyer, 'release', key);
        break;
      case 'refunded':
        await g.act(seller, 'decline', key);
        break;
      case 'cancelled':
        await g.act(buyer, 'cancel', key);
        break;
      case 'disputed':
        await g.act(seller, 'accept', key);
        await g.act(buyer, 'dispute', key);
        break;
    }
    return key;
  }

  balances(...addresses: string[]): Promise<bigint[]> {
    return Promise.all(addresses.map((a) => this.usdcGateway.balanceOf(a)));
  }
}
