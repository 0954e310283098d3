import { AppConfig } from '../../config/app-config';
import { deployEscrowContract } from '@lib/chain';
import { EscrowChainService } from '../../modules/escrow/escrow-chain.service';
import { Wallet } from 'ethers';
import { addressOption, UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `chain:deploy` operator command (docs/operations.md; usage in `summary`). */
export const chainDeployCommand: CommandDeclaration = {
  name: 'chain:deploy',
  summary:
    'chain:deploy [--terms-signer 0x…] [--arbiter 0x…]   (deploys CheckoutEscrow on RPC_URL for USDC_ADDRESS with DEPLOYER_PRIVATE_KEY; prints the env lines to keep)',
  run: async (app, values) => {
    const config = app.get(AppConfig);
    const chain = app.get(EscrowChainService);
    const chainId = Number(await chain.provider.send('eth_chainId', []));
    if (chainId !== config.env.CHAIN_ID) {
      throw new UsageError(`the node at RPC_URL is chain ${chainId}, not CHAIN_ID ${config.env.CHAIN_ID}: nothing deployed`);
    }
    const termsSigner = addressOption(values, 'terms-signer', () => new Wallet(config.secret('TERMS_SIGNER_PRIVATE_KEY')).address);
    const arbiter = addressOption(values, 'arbiter', () => new Wallet(config.secret('ARBITER_PRIVATE_KEY')).address);
    const deployed = await deployEscrowContract({
      provider: chain.provider,
      deployerKey: config.secret('DEPLOYER_PRIVATE_KEY'),
      usdcAddress: config.env.USDC_ADDRESS,
      termsSigner,
      arbiter,
    });
    return {
      ESCROW_ADDRESS: deployed.escrowAddress,
      ESCROW_DEPLOY_BLOCK: deployed.deployBlock,
      txHash: deployed.txHash,
      chainId,
      usdcAddress: config.env.USDC_ADDRESS,
      termsSigner,
      arbiter,
      admin: deployed.admin,
    };
  },
  text: (r) =>
    [
      `# CheckoutEscrow on chain ${String(r.chainId)} (tx ${String(r.txHash)}); admin ${String(r.admin)}, terms signer ${String(r.termsSigner)}, arbiter ${String(r.arbiter)}, USDC ${String(r.usdcAddress)}`,
      `ESCROW_ADDRESS=${String(r.ESCROW_ADDRESS)}`,
      `ESCROW_DEPLOY_BLOCK=${String(r.ESCROW_DEPLOY_BLOCK)}`,
    ].join('\n'),
  options: {
  'terms-signer': { type: 'string' },
  arbiter: { type: 'string' },
  },
  secrets: ['DEPLOYER_PRIVATE_KEY', 'TERMS_SIGNER_PRIVATE_KEY', 'ARBITER_PRIVATE_KEY'],
};
