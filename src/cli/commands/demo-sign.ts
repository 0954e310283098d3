import { EscrowService } from '../../modules/escrow/escrow.service';
import { ESCROW_ACTIONS, EscrowApiAction } from '../../modules/escrow/escrow.state';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `demo:sign` operator command (docs/operations.md; usage in `summary`). */
export const demoSignCommand: CommandDeclaration = {
  name: 'demo:sign',
  summary: 'demo:sign <escrowId> <accept|decline|mark-delivered|release|cancel|dispute>   (local chain: sign as the demo party; prints txHash)',
  run: async (app, values, positionals) => {
    const [escrowId, action] = positionals;
    if (!escrowId || !action || !(action in ESCROW_ACTIONS)) {
      throw new UsageError(`demo:sign needs an escrow id and one of ${Object.keys(ESCROW_ACTIONS).join(', ')}`);
    }
    const wallets = {
      buyer: new Wallet(process.env.DEMO_BUYER_PRIVATE_KEY || anvilKey('demoBuyer')),
      seller: new Wallet(process.env.DEMO_SELLER_PRIVATE_KEY || anvilKey('demoSeller')),
    };
    const signed = await app.get(EscrowService).signAsParty(escrowId, action as EscrowApiAction, wallets);
    return { ...signed, escrowId, action };
  },
  options: {
  },
  secrets: ['RELAYER_PRIVATE_KEY'],
};
