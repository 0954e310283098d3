import type { CommandDeclaration } from '../command';
import { orgCreateCommand } from './org-create';
import { agentCreateCommand } from './agent-create';
import { usdcBalanceCommand } from './usdc-balance';
import { agentPauseCommand } from './agent-pause';
import { agentResumeCommand } from './agent-resume';
import { agentPolicySetCommand } from './agent-policy-set';
import { agentSignerEnableCommand } from './agent-signer-enable';
import { agentSignerDisableCommand } from './agent-signer-disable';
import { agentFundCommand } from './agent-fund';
import { mandateRevokeCommand } from './mandate-revoke';
import { demoMandateCommand } from './demo-mandate';
import { keyCreateCommand } from './key-create';
import { oauthClientCreateCommand } from './oauth-client-create';
import { demoPayCommand } from './demo-pay';
import { demoSignCommand } from './demo-sign';
import { escrowResolveCommand } from './escrow-resolve';
import { verificationDecideCommand } from './verification-decide';
import { demoVerifyWalletCommand } from './demo-verify-wallet';
import { demoSeedCommand } from './demo-seed';
import { chainDeployCommand } from './chain-deploy';
import { reconcileCommand } from './reconcile';
import { balanceReconcileCommand } from './balance-reconcile';
import { keyRevokeCommand } from './key-revoke';
import { oauthClientRevokeCommand } from './oauth-client-revoke';

/**
 * Every operator command (docs/architecture.md §9, docs/operations.md), one file each; the order is
 * the order `--help` lists them in. Keyed by command name.
 */
export const COMMANDS: Readonly<Record<string, CommandDeclaration>> = Object.fromEntries(
  [orgCreateCommand, agentCreateCommand, usdcBalanceCommand, agentPauseCommand, agentResumeCommand, agentPolicySetCommand, agentSignerEnableCommand, agentSignerDisableCommand, agentFundCommand, mandateRevokeCommand, demoMandateCommand, keyCreateCommand, oauthClientCreateCommand, demoPayCommand, demoSignCommand, escrowResolveCommand, verificationDecideCommand, demoVerifyWalletCommand, demoSeedCommand, chainDeployCommand, reconcileCommand, keyRevokeCommand, oauthClientRevokeCommand, balanceReconcileCommand].map((c) => [c.name, c]),
);
