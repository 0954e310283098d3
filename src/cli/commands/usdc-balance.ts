import { ChainAccess } from '../../chain/chain-access.service';
import { formatAmount } from '@lib/money';
import { UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `usdc:balance` operator command (docs/operations.md; usage in `summary`). */
export const usdcBalanceCommand: CommandDeclaration = {
  name: 'usdc:balance',
  summary: 'usdc:balance <address>   (USDC of an address on the configured chain, decimal text)',
  run: async (app, values, positionals) => {
    const address = positionals[0];
    if (!address || !/^0x[0-9a-fA-F]{40}$/.test(address)) throw new UsageError('usdc:balance needs a 0x address');
    return { address, balance: formatAmount(await app.get(ChainAccess).usdc.balanceOf(address)), currency: 'USDC' };
  },
  options: {
  },
  secrets: [],
};
