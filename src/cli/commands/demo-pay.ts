import { EscrowService } from '../../modules/escrow/escrow.service';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `demo:pay` operator command (docs/operations.md; usage in `summary`). */
export const demoPayCommand: CommandDeclaration = {
  name: 'demo:pay',
  summary: 'demo:pay <checkoutId>   (local chain: the demo buyer funds the checkout escrow)',
  run: async (app, values, positionals) => {
    const checkoutId = positionals[0];
    if (!checkoutId) throw new UsageError('demo:pay needs a checkout session id');
    const buyer = new Wallet(process.env.DEMO_BUYER_PRIVATE_KEY || anvilKey('demoBuyer'));
    const result = await app.get(EscrowService).payAsBuyer(checkoutId, buyer);
    return { ...result, checkoutSessionId: checkoutId, buyer: buyer.address };
  },
  options: {
  },
  secrets: ['TERMS_SIGNER_PRIVATE_KEY', 'RELAYER_PRIVATE_KEY'],
};
