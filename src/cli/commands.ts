import type { INestApplicationContext } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MERCHANT_SCOPES } from '../kernel/auth/scopes';
import { TransactionHost, TxHost } from '../database/transaction';
import { EscrowService } from '../modules/escrow/escrow.service';
import { ESCROW_ACTIONS, EscrowApiAction } from '../modules/escrow/escrow.state';
import { OrgsService } from '../modules/orgs/orgs.service';
import { AgentsService, PolicyInput } from '../modules/agents/agents.service';
import { MandatesService } from '../modules/mandates/mandates.service';
import { signIntentMandate } from '../modules/mandates/mandate-signing';
import { ChainAccess } from '../chain/chain-access.service';
import { formatAmount } from '@lib/money';
import { OPERATOR_DECISIONS, OperatorDecision } from '../modules/verification/verification.state';
import { VerificationService } from '../modules/verification/verification.service';
import { ANVIL_KEYS, anvilKey, deployEscrowContract } from '@lib/chain';
import { EscrowChainService } from '../modules/escrow/escrow-chain.service';
import { ReconciliationService } from '../chain/reconciliation/reconciliation.service';
import { Wallet } from 'ethers';
import { listOption, ParsedArgs, requireOption, UsageError } from './args';

export type CommandResult = Record<string, unknown>;
export type Command = (app: INestApplicationContext, args: ParsedArgs) => Promise<CommandResult>;

/** anvil account 5, the demo seller (see libs/chain ANVIL_KEYS). */
const DEMO_SELLER_ADDRESS = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';

export function inTransaction<T>(app: INestApplicationContext, fn: () => Promise<T>): Promise<T> {
  return (app.get(TransactionHost) as TxHost).withTransaction(fn);
}

/** An address option, or `fallback` when absent. @throws UsageError when the value is not a 0x address. */
function addressOption(args: ParsedArgs, name: string, fallback: () => string): string {
  const v = args.options[name];
  if (v === undefined) return fallback();
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(v)) throw new UsageError(`--${name} must be a 0x address`);
  return v;
}

/**
 * Operator commands (docs/architecture.md §9); each returns one JSON-able object. `text`, when present,
 * is what the command prints without --json (instead of `key: value` lines).
 */
export const COMMANDS: Record<string, { usage: string; run: Command; text?: (result: CommandResult) => string }> = {
  'org:create': {
    usage: 'org:create --name N --handle H [--payout-address 0x…]',
    run: async (app, args) => {
      const org = await inTransaction(app, () =>
        app.get(OrgsService).createOrganization({
          name: requireOption(args, 'name'),
          handle: requireOption(args, 'handle'),
          payoutAddress: typeof args.options['payout-address'] === 'string' ? args.options['payout-address'] : undefined,
        }),
      );
      return { id: org.id, handle: org.handle, payoutAddress: org.payoutAddress };
    },
  },
  'agent:create': {
    usage: 'agent:create --org ID --slug S --owner-address 0x… [--name N]   (with a sealed session signer, disabled, no USDC)',
    run: async (app, args) => {
      const agent = await app.get(AgentsService).create({
        organizationId: requireOption(args, 'org'),
        slug: requireOption(args, 'slug'),
        ownerAddress: requireOption(args, 'owner-address'),
        name: typeof args.options.name === 'string' ? args.options.name : undefined,
      });
      return { id: agent.id, slug: agent.slug };
    },
  },
  'usdc:balance': {
    usage: 'usdc:balance <address>   (USDC of an address on the configured chain, decimal text)',
    run: async (app, args) => {
      const address = args.positionals[0];
      if (!address || !/^0x[0-9a-fA-F]{40}$/.test(address)) throw new UsageError('usdc:balance needs a 0x address');
      return { address, balance: formatAmount(await app.get(ChainAccess).gateway.usdcBalance(address)), currency: 'USDC' };
    },
  },
  'agent:pause': {
    usage: 'agent:pause --agent ID   (every spend answers 403 agent_paused; reads still work)',
    run: async (app, args) => ({ ...(await app.get(AgentsService).setPaused(requireOption(args, 'agent'), true)) }),
  },
  'agent:resume': {
    usage: 'agent:resume --agent ID',
    run: async (app, args) => ({ ...(await app.get(AgentsService).setPaused(requireOption(args, 'agent'), false)) }),
  },
  'agent:policy:set': {
    usage:
      'agent:policy:set --agent ID [--per-transaction-max A] [--daily-limit A] [--monthly-limit A] [--approval-threshold A] ' +
      '[--allowed-recipients a,b] [--mode autonomous|mandate] [--valid-from ISO] [--expires-at ISO]   (sets the whole policy; absent flags are unset)',
    run: async (app, args) => {
      const opt = (name: string) => {
        const v = args.options[name];
        if (v === true) throw new UsageError(`--${name} needs a value`);
        return typeof v === 'string' ? v : undefined;
      };
      const input: PolicyInput = {
        perTransactionMax: opt('per-transaction-max'),
        dailyLimit: opt('daily-limit'),
        monthlyLimit: opt('monthly-limit'),
        approvalThreshold: opt('approval-threshold'),
        allowedRecipients: opt('allowed-recipients') === undefined ? undefined : listOption(args, 'allowed-recipients'),
        mode: opt('mode'),
        validFrom: opt('valid-from'),
        expiresAt: opt('expires-at'),
      };
      return { ...(await app.get(AgentsService).setPolicy(requireOption(args, 'agent'), input)) };
    },
  },
  'agent:signer:enable': {
    usage: 'agent:signer:enable --agent ID',
    run: async (app, args) => ({ ...(await app.get(AgentsService).setSignerEnabled(requireOption(args, 'agent'), true)) }),
  },
  'agent:signer:disable': {
    usage: 'agent:signer:disable --agent ID   (sweeps the float back to the owner)',
    run: async (app, args) => ({ ...(await app.get(AgentsService).setSignerEnabled(requireOption(args, 'agent'), false)) }),
  },
  'agent:fund': {
    usage: 'agent:fund --agent ID --amount 200.00   (local chain: the demo owner wallet tops up the session signer)',
    run: async (app, args) => {
      if (app.get(AppConfig).env.CHAIN_ID !== 31337) throw new UsageError('agent:fund is for the local chain; the owner tops up the signer with a plain USDC transfer');
      const owner = new Wallet(process.env.DEMO_OWNER_PRIVATE_KEY || anvilKey('demoBuyer'));
      const result = await app.get(AgentsService).fund(requireOption(args, 'agent'), requireOption(args, 'amount'), owner);
      return { ...result, owner: owner.address };
    },
  },
  'mandate:revoke': {
    usage: 'mandate:revoke <mandateId>   (the mandate stops covering spends at once; docs/architecture.md §14)',
    run: async (app, args) => {
      const id = args.positionals[0];
      if (!id || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) throw new UsageError('mandate:revoke needs a mandate id');
      const m = await app.get(MandatesService).revokeByOperator(id);
      return { id: m.id, status: m.status, revokedAt: m.revokedAt };
    },
  },
  'demo:mandate': {
    usage:
      'demo:mandate --agent ID --payees a,b --max-per-payment 20.00 --total 50.00 [--expires-at ISO] [--description D]   ' +
      '(local chain: the demo owner wallet signs an EIP-712 IntentMandate; prints the POST /api/v1/mandates body)',
    run: async (app, args) => {
      const env = app.get(AppConfig).env;
      if (env.CHAIN_ID !== 31337) throw new UsageError('demo:mandate is for the local chain; the owner signs with their own wallet elsewhere');
      const owner = new Wallet(process.env.DEMO_OWNER_PRIVATE_KEY || anvilKey('demoBuyer'));
      const agent = await app.get(AgentsService).view(requireOption(args, 'agent'));
      const description = args.options.description;
      const expiresAt = args.options['expires-at'];
      const terms = {
        payees: listOption(args, 'payees'),
        maxAmountPerPayment: requireOption(args, 'max-per-payment'),
        totalAmount: requireOption(args, 'total'),
        expiresAt: typeof expiresAt === 'string' ? new Date(expiresAt).toISOString() : new Date(Date.now() + 86_400_000).toISOString(),
        description: typeof description === 'string' ? description : 'Demo mandate',
      };
      return { ...terms, credential: await signIntentMandate(owner, env.CHAIN_ID, agent.slug, terms) };
    },
  },
  'key:create': {
    usage: 'key:create --org ID --type merchant|agent [--agent ID] --scopes a,b',
    run: async (app, args) => {
      const type = requireOption(args, 'type');
      if (type !== 'merchant' && type !== 'agent') throw new UsageError('--type must be merchant or agent');
      const { key, secret } = await inTransaction(app, () =>
        app.get(OrgsService).createApiKey({
          organizationId: requireOption(args, 'org'),
          kind: type,
          agentId: type === 'agent' ? requireOption(args, 'agent') : undefined,
          scopes: listOption(args, 'scopes'),
        }),
      );
      return { id: key.id, key: secret, scopes: key.scopes };
    },
  },
  'oauth:client:create': {
    usage: 'oauth:client:create --org ID --scopes a,b',
    run: async (app, args) => {
      const { client, clientSecret } = await inTransaction(app, () =>
        app.get(OrgsService).createOAuthClient({ organizationId: requireOption(args, 'org'), scopes: listOption(args, 'scopes') }),
      );
      return { clientId: client.clientId, clientSecret, scopes: client.scopes };
    },
  },
  'demo:pay': {
    usage: 'demo:pay <checkoutId>   (local chain: the demo buyer funds the checkout escrow)',
    run: async (app, args) => {
      const checkoutId = args.positionals[0];
      if (!checkoutId) throw new UsageError('demo:pay needs a checkout session id');
      const buyer = new Wallet(process.env.DEMO_BUYER_PRIVATE_KEY || anvilKey('demoBuyer'));
      const result = await app.get(EscrowService).payAsBuyer(checkoutId, buyer);
      return { ...result, checkoutSessionId: checkoutId, buyer: buyer.address };
    },
  },
  'demo:sign': {
    usage: 'demo:sign <escrowId> <accept|decline|mark-delivered|release|cancel|dispute>   (local chain: sign as the demo party; prints txHash)',
    run: async (app, args) => {
      const [escrowId, action] = args.positionals;
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
  },
  'escrow:resolve': {
    usage: 'escrow:resolve <escrowId> --to buyer|seller   (arbiter only; not public API)',
    run: async (app, args) => {
      const escrowId = args.positionals[0];
      const to = requireOption(args, 'to');
      if (!escrowId) throw new UsageError('escrow:resolve needs an escrow id');
      if (to !== 'buyer' && to !== 'seller') throw new UsageError('--to must be buyer or seller');
      return app.get(EscrowService).resolveDispute(escrowId, to);
    },
  },
  'verification:decide': {
    usage: 'verification:decide --org ID --identity approved|declined|reopen   (operator decision on the identity check)',
    run: async (app, args) => {
      const organizationId = requireOption(args, 'org');
      const decision = requireOption(args, 'identity');
      if (!(OPERATOR_DECISIONS as readonly string[]).includes(decision)) throw new UsageError(`--identity must be one of ${OPERATOR_DECISIONS.join(', ')}`);
      const verification = await app.get(VerificationService).decide(organizationId, decision as OperatorDecision);
      return { organizationId, ...verification };
    },
  },
  'demo:verify-wallet': {
    usage: 'demo:verify-wallet <orgId>   (local chain: the payout wallet pays and confirms the wallet check)',
    run: async (app, args) => {
      const organizationId = args.positionals[0];
      if (!organizationId) throw new UsageError('demo:verify-wallet needs an organisation id');
      const org = await app.get(OrgsService).getOrganization(organizationId);
      if (!org?.payoutAddress) throw new UsageError('the organisation has no payout address');
      const keys = [process.env.DEMO_SELLER_PRIVATE_KEY, process.env.DEMO_BUYER_PRIVATE_KEY, ...ANVIL_KEYS].filter((k): k is string => !!k);
      const key = keys.find((k) => new Wallet(k).address === org.payoutAddress);
      if (!key) throw new UsageError(`no local key for the payout address ${org.payoutAddress} (set DEMO_SELLER_PRIVATE_KEY)`);
      return app.get(VerificationService).demoVerifyWallet(organizationId, new Wallet(key));
    },
  },
  'demo:seed': {
    usage: 'demo:seed [--handle demo-shop]   (a demo shop with every merchant scope, and the demo buyer’s organisation)',
    run: async (app, args) => {
      const config = app.get(AppConfig);
      const orgs = app.get(OrgsService);
      const handle = typeof args.options.handle === 'string' ? args.options.handle : `demo-shop-${Date.now().toString(36)}`;
      const buyerAddress = new Wallet(process.env.DEMO_BUYER_PRIVATE_KEY || anvilKey('demoBuyer')).address;
      const { org, key, buyerKey } = await inTransaction(app, async () => {
        const org = await orgs.createOrganization({ name: 'Demo Shop', handle, payoutAddress: process.env.DEMO_SELLER_ADDRESS || DEMO_SELLER_ADDRESS });
        const key = await orgs.createApiKey({ organizationId: org.id, kind: 'merchant', scopes: [...MERCHANT_SCOPES] });
        // The buyer side of the demo: the organisation bound to the demo buyer wallet (reused across runs,
        // since the oldest organisation with an address is the one bound to it).
        const buyerOrgId =
          (await orgs.organizationIdForAddress(buyerAddress)) ??
          (await orgs.createOrganization({ name: 'Demo Buyer', handle: `demo-buyer-${Date.now().toString(36)}`, payoutAddress: buyerAddress })).id;
        const buyerKey = await orgs.createApiKey({ organizationId: buyerOrgId, kind: 'merchant', scopes: ['escrow:read', 'escrow:write'] });
        return { org, key, buyerKey };
      });
      const api = config.env.API_BASE_URL.replace(/\/$/, '');
      const curl =
        `curl -s -X POST ${api}/api/v1/checkout-sessions -H 'X-Api-Key: ${key.secret}' ` +
        `-H 'Content-Type: application/json' -H 'Idempotency-Key: demo-${Date.now()}' -d '{"amount":"25.00","description":"Demo order"}'`;
      return {
        organizationId: org.id,
        handle: org.handle,
        payoutAddress: org.payoutAddress,
        merchantKey: key.secret,
        scopes: key.key.scopes,
        buyerKey: buyerKey.secret,
        buyerAddress,
        apiUrl: api,
        swaggerUrl: `${api}/docs`,
        checkoutBaseUrl: config.env.CHECKOUT_BASE_URL,
        curl,
      };
    },
  },
  'chain:deploy': {
    usage:
      'chain:deploy [--terms-signer 0x…] [--arbiter 0x…]   (deploys CheckoutEscrow on RPC_URL for USDC_ADDRESS with DEPLOYER_PRIVATE_KEY; prints the env lines to keep)',
    run: async (app, args) => {
      const config = app.get(AppConfig);
      const chain = app.get(EscrowChainService);
      const chainId = Number(await chain.provider.send('eth_chainId', []));
      if (chainId !== config.env.CHAIN_ID) {
        throw new UsageError(`the node at RPC_URL is chain ${chainId}, not CHAIN_ID ${config.env.CHAIN_ID}: nothing deployed`);
      }
      const termsSigner = addressOption(args, 'terms-signer', () => new Wallet(config.secret('TERMS_SIGNER_PRIVATE_KEY')).address);
      const arbiter = addressOption(args, 'arbiter', () => new Wallet(config.secret('ARBITER_PRIVATE_KEY')).address);
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
  },
  reconcile: {
    usage: 'reconcile   (one reconciliation pass of the ledger against the chain now; reports, never fixes; DESIGN §18)',
    run: async (app) => {
      const report = await app.get(ReconciliationService).run();
      return { ...report };
    },
  },
  'key:revoke': {
    usage: 'key:revoke --key ID   (the key answers 401 from the next request on)',
    run: async (app, args) => {
      const revoked = await inTransaction(app, () => app.get(OrgsService).revokeApiKey(requireOption(args, 'key')));
      return { id: revoked.id, revokedAt: revoked.revokedAt.toISOString() };
    },
  },
  'oauth:client:revoke': {
    usage: 'oauth:client:revoke --client bac_…   (no new tokens; its access tokens answer 401 at once)',
    run: async (app, args) => {
      const revoked = await inTransaction(app, () => app.get(OrgsService).revokeOAuthClient(requireOption(args, 'client')));
      return { clientId: revoked.clientId, revokedAt: revoked.revokedAt.toISOString() };
    },
  },
};
