import { OrgsService } from '../../modules/orgs/orgs.service';
import { VerificationService } from '../../modules/verification/verification.service';
import { ANVIL_KEYS } from '@lib/chain';
import { Wallet } from 'ethers';
import { UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `demo:verify-wallet` operator command (docs/operations.md; usage in `summary`). */
export const demoVerifyWalletCommand: CommandDeclaration = {
  name: 'demo:verify-wallet',
  summary: 'demo:verify-wallet <orgId>   (local chain: the payout wallet pays and confirms the wallet check)',
  run: async (app, values, positionals) => {
    const organizationId = positionals[0];
    if (!organizationId) throw new UsageError('demo:verify-wallet needs an organisation id');
    const org = await app.get(OrgsService).getOrganization(organizationId);
    if (!org?.payoutAddress) throw new UsageError('the organisation has no payout address');
    const keys = [process.env.DEMO_SELLER_PRIVATE_KEY, process.env.DEMO_BUYER_PRIVATE_KEY, ...ANVIL_KEYS].filter((k): k is string => !!k);
    const key = keys.find((k) => new Wallet(k).address === org.payoutAddress);
    if (!key) throw new UsageError(`no local key for the payout address ${org.payoutAddress} (set DEMO_SELLER_PRIVATE_KEY)`);
    return app.get(VerificationService).demoVerifyWallet(organizationId, new Wallet(key));
  },
  options: {
  },
  secrets: [],
};
