import { Injectable } from '@nestjs/common';
import { formatAmount } from '@lib/money';
import { formatEther } from 'ethers';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { ChainAccess, CHAIN_RETRY_AFTER_SECONDS } from '../../chain/chain-access.service';
import { OrgsService } from './orgs.service';

/** What the payout address holds on chain now; amounts are decimal text. */
export interface PayoutBalance {
  address: string | null;
  /** USDC, 6 decimals as text ("12.50"); null when there is no payout address. */
  usdc: string | null;
  /** Native ETH for gas (the payout wallet pays for its seller actions), ether as text ("0.05"); null likewise. */
  eth: string | null;
  /** The block the balances were read at; null likewise. */
  blockNumber: number | null;
}

/**
 * The payout address's USDC and ETH balances read from the chain (console overview, DESIGN §19),
 * with a bounded wait: each RPC request times out after RPC_TIMEOUT_MS (ChainAccess), and the whole
 * read is given RPC_TIMEOUT_MS as well, so a node that does not answer never holds the caller longer
 * (docs/architecture.md §5: every chain wait bounded).
 */
@Injectable()
export class PayoutBalanceService {
  constructor(
    private readonly orgs: OrgsService,
    private readonly chain: ChainAccess,
    private readonly config: AppConfig,
  ) {}

  /**
   * @throws AppError not_found (organization); 503 unavailable (`details.reason: "chain_unavailable"`)
   *   when the node does not answer within RPC_TIMEOUT_MS or fails.
   */
  async read(organizationId: string): Promise<PayoutBalance> {
    const org = await this.orgs.getOrganization(organizationId);
    if (!org) throw AppError.notFound('organization');
    if (!org.payoutAddress) return { address: null, usdc: null, eth: null, blockNumber: null };
    const address = org.payoutAddress;
    const ms = this.config.env.RPC_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    });
    try {
      // One read at one block; a node error (that block gone after a reorg) reads again at a fresh head (DESIGN §22).
      const read = this.chain.read('payout balance', async () => {
        const blockNumber = await this.chain.provider.getBlockNumber();
        const [usdc, wei] = await Promise.all([this.chain.usdc.balanceOf(address, blockNumber), this.chain.provider.getBalance(address, blockNumber)]);
        return { address, usdc: formatAmount(usdc), eth: formatEther(wei), blockNumber };
      });
      read.catch(() => undefined); // a late failure after the deadline is not unhandled
      return await Promise.race([read, deadline]);
    } catch {
      // The node's error is not echoed: it can carry the RPC URL (and a provider's key in it).
      throw new AppError('unavailable', 'The chain node did not answer; balances are unavailable for now', { reason: 'chain_unavailable' }, 503, { 'Retry-After': String(CHAIN_RETRY_AFTER_SECONDS) });
    } finally {
      clearTimeout(timer);
    }
  }
}
