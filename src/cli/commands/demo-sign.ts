import { EscrowService } from '../../modules/escrow/escrow.service';
import { ESCROW_ACTIONS, EscrowApiAction } from '../../modules/escrow/escrow.state';
import { ChainAccess } from '../../chain/chain-access.service';
import { AppError } from '../../common/errors/app-error';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/**
 * The `demo:sign` operator command (docs/operations.md; usage in `summary`). Demo tooling (local
 * chain): signs and sends `action` on-chain as the party allowed to act (DEMO_BUYER_PRIVATE_KEY /
 * DEMO_SELLER_PRIVATE_KEY, anvil's demo keys by default), without telling the API, so the caller can
 * then report the tx hash as a real party would. Prints `{ txHash, from, escrowId, action }`.
 * @throws AppError not_found; ChainTxError when the contract refuses.
 */
export const demoSignCommand: CommandDeclaration = {
  name: 'demo:sign',
  summary: 'demo:sign <escrowId> <accept|decline|mark-delivered|release|cancel|dispute>   (local chain: sign as the demo party; prints txHash)',
  run: async (app, values, positionals) => {
    const [escrowId, action] = positionals;
    if (!escrowId || !action || !(action in ESCROW_ACTIONS)) {
      throw new UsageError(`demo:sign needs an escrow id and one of ${Object.keys(ESCROW_ACTIONS).join(', ')}`);
    }
    const escrow = await app.get(EscrowService).buyerView(escrowId);
    if (!escrow) throw AppError.notFound('escrow');
    const chain = app.get(ChainAccess);
    const actor = ESCROW_ACTIONS[action as EscrowApiAction].actors[0];
    const key = actor === 'buyer' ? process.env.DEMO_BUYER_PRIVATE_KEY || anvilKey('demoBuyer') : process.env.DEMO_SELLER_PRIVATE_KEY || anvilKey('demoSeller');
    const wallet = new Wallet(key, chain.provider);
    const txHash = await chain.gateway.act(wallet, action === 'mark-delivered' ? 'markDelivered' : (action as Exclude<EscrowApiAction, 'mark-delivered'>), escrow.escrowKey);
    return { txHash, from: wallet.address, escrowId, action };
  },
  options: {
  },
  secrets: ['RELAYER_PRIVATE_KEY'],
};
