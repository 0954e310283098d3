import type { Provider } from 'ethers';
import { ChainClock } from './chain-clock';
import { EscrowGateway } from './escrow-gateway';
import { TxSender } from './tx-sender';
import { UsdcGateway } from './usdc-gateway';

/** The deployed contracts' addresses (DeployedEscrow fits) and USDC's configured EIP-712 name/version. */
export interface ChainGatewaysConfig {
  escrowAddress: string;
  usdcAddress: string;
  /** A chain profile's USDC domain (DESIGN §18); absent = read from the token. */
  usdcDomain?: { name: string; version: string };
  /** Bound in ms on the wait for each of the shared sender's own transactions (TxSender's default when absent). */
  waitMs?: number;
}

/** The escrow's gateway, USDC's EIP-3009 gateway and the chain clock on one provider. */
export interface ChainGateways {
  escrow: EscrowGateway;
  usdc: UsdcGateway;
  clock: ChainClock;
}

/**
 * Builds the three views of one chain on `provider`, sharing one {@link TxSender} (sends from one
 * wallet are serialised across both contracts). Throws TypeError on an invalid address.
 */
export function connectChain(provider: Provider, config: ChainGatewaysConfig): ChainGateways {
  const usdc = new UsdcGateway(provider, { address: config.usdcAddress, domain: config.usdcDomain }, new TxSender(provider, { waitMs: config.waitMs }));
  return { escrow: new EscrowGateway(provider, { escrowAddress: config.escrowAddress }, usdc), usdc, clock: new ChainClock(provider) };
}
