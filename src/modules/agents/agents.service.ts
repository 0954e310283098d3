import { Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { formatAmount, parseAmount } from '@lib/money';
import { v7 as uuidv7 } from 'uuid';
import { getAddress, hexlify, isHexString, randomBytes, verifyTypedData, Wallet } from 'ethers';
import { AppConfig } from '../../config/app-config';
import { AppError } from '../../common/errors/app-error';
import { TransactionHost, TxHost } from '../../database/transaction';
import { OrgsService } from '../orgs/orgs.service';
import { ChainAccess } from '../../chain/chain-access.service';
import { ChainCursors } from '../../chain/chain-cursors.repository';
import { RelayerService } from '../../chain/relayer/relayer.service';
import { policyWindows, renderPolicy, StoredPolicy } from './agent-policy';
import { AgentRow, AgentsRepository } from './agents.repository';
import { AgentUsageSource } from './agent-usage.port';
import { readSignerBalance } from './signer-balance';
import { ENABLE_SIGNER_TYPES, ownerDomain, WITHDRAW_TYPES } from './owner-messages';
import { AGENT_CONSENT_TYPES, type AgentConsentRefusal, ConsentAction, consentPayloadHash, consentTypedData, policyRaises, SPENDING_SCOPES } from './agent-consent';
import { expandScopes } from '../../kernel/auth/scopes';
import type { Principal } from '../../kernel/auth/principal';
import { SignerVault } from './signer-vault.service';
import { AgentHooks } from './agent-hooks.service';
import { latePort } from '../../common/late-port';

/** GET /agent (docs/architecture.md §13): amounts decimal text. */
export interface AgentView {
  id: string;
  slug: string;
  name: string | null;
  organizationId: string;
  ownerAddress: string;
  paused: boolean;
  signer: { enabled: boolean; address: string | null };
  policy: Record<string, unknown> | null;
  usage: { usedToday: string; usedThisMonth: string };
  createdAt: string;
  updatedAt: string;
}

/** GET /balance: USDC decimal text; `balance` = on-chain minus open reservations. */
export interface BalanceView {
  address: string;
  balance: string;
  onChainBalance: string;
  ownerAddress: string;
  ownerBalance: string;
  currency: 'USDC';
}

/** Policy input of agent:policy:set: decimal amounts, ISO times; absent fields are unset. */
export interface PolicyInput {
  perTransactionMax?: string;
  dailyLimit?: string;
  monthlyLimit?: string;
  approvalThreshold?: string;
  allowedRecipients?: string[];
  mode?: string;
  validFrom?: string;
  expiresAt?: string;
}

/** An owner's EIP-712 signature over a single-use message (nonce bytes32, deadline unix seconds). */
export interface OwnerSigned {
  nonce: string;
  deadline: number;
  signature: string;
}

/**
 * Who acts from the console, for the agent-owner rule (DESIGN §19 "Whose float it is"): the session's
 * address and, when it is not the agent's owner, the owner's AgentConsent carried by the request.
 * Absent (operator CLI, trusted) → no check.
 */
export interface ConsoleActor {
  address: string;
  consent?: OwnerSigned;
}

/** The console session `principal` acting, with the owner's consent its request carries, for the agent-owner rule (DESIGN §19). */
export function consoleActor(principal: Pick<Principal, 'address'>, consent?: OwnerSigned): ConsoleActor {
  return { address: principal.address!, consent };
}

/** How long the AgentConsent a refusal offers stays valid (seconds). */
const CONSENT_OFFER_SECONDS = 600;

/** Seconds before a payment authorization's validBefore; also the longest owner-message validity accepted. */
const OWNER_MESSAGE_MAX_SECONDS = 3600;

/**
 * Agents and their session signers (docs/architecture.md §13): identity and usage, the policy, pause,
 * enabling the signer (operator CLI or the owner's EnableSigner signature), the owner's Withdraw, and
 * on-chain balances. Chain calls run outside database transactions.
 */
@Injectable()
export class AgentsService {
  private readonly logger = new Logger('Agents');

  constructor(
    private readonly repo: AgentsRepository,
    private readonly vault: SignerVault,
    private readonly orgs: OrgsService,
    private readonly chain: ChainAccess,
    private readonly relayer: RelayerService,
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
    private readonly cursors: ChainCursors,
    private readonly hooks: AgentHooks,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** The payments module (which sums the usage over its table) depends on agents: resolved at call time. */
  private readonly usage = latePort(() => this.moduleRef, AgentUsageSource);

  private tx<T>(fn: () => Promise<T>): Promise<T> {
    return (this.txHost as TxHost).withTransaction(fn);
  }

  /**
   * Creates an agent with a fresh sealed session signer (disabled, no USDC).
   * @throws AppError invalid_request for a bad slug/address or a slug already taken by an organisation or agent.
   */
  async create(input: { organizationId: string; slug: string; ownerAddress: string; name?: string }, by?: ConsoleActor): Promise<AgentRow> {
    let ownerAddress: string;
    try {
      ownerAddress = getAddress(input.ownerAddress);
    } catch {
      throw AppError.invalidParam('ownerAddress', 'must be an address');
    }
    const payload = { organizationId: input.organizationId, ownerAddress, slug: input.slug };
    const needsProof = by !== undefined && getAddress(by.address) !== ownerAddress;
    if (needsProof) this.verifyConsent(input.slug, ownerAddress, 'create_agent', payload, by.consent);
    try {
      return await this.tx(async () => {
        const agent = { id: uuidv7(), organizationId: input.organizationId, slug: input.slug, ownerAddress: await this.orgs.checkNewAgent(input) };
        await this.repo.insert(agent);
        if (needsProof && !(await this.repo.useOwnerNonce(agent.id, by!.consent!.nonce, 'consent'))) throw this.consentRefusal(input.slug, ownerAddress, 'create_agent', payload, 'nonce_used');
        const signer = this.vault.generate(agent.id);
        await this.repo.setSigner(agent.id, signer.address, signer.sealed, input.name ?? null);
        return (await this.repo.find(agent.id))!;
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw AppError.invalidParam('slug', 'is already taken by an organisation or agent');
      throw err;
    }
  }

  /** @throws AppError not_found. */
  /**
   * Records an owner signature's nonce for `purpose` (single use per agent, DESIGN §13, §14), in the
   * caller's transaction. @returns false when the nonce was used before.
   */
  useOwnerNonce(agentId: string, nonce: string, purpose: string): Promise<boolean> {
    return this.repo.useOwnerNonce(agentId, nonce, purpose);
  }

  async require(agentId: string): Promise<AgentRow> {
    const agent = await this.repo.find(agentId);
    if (!agent) throw AppError.notFound('agent');
    return agent;
  }

  /**
   * An agent of `organizationId`, for an owner acting from the console (docs/architecture.md §19).
   * @throws AppError not_found for an unknown agent or an agent of another organisation.
   */
  async requireInOrganization(organizationId: string, agentId: string): Promise<AgentRow> {
    const agent = await this.repo.find(agentId);
    if (!agent || agent.organizationId !== organizationId) throw AppError.notFound('agent');
    return agent;
  }

  /**
   * The agent `agentId` as a console session may manage it (DESIGN §19, the ownership check of every
   * console agent operation): an agent of the principal's organisation, and, for an agent owner's
   * session (`principal.agentId` set: it acts for that one agent), that very agent.
   * @throws AppError not_found (agent) otherwise.
   */
  async requireOwned(principal: Pick<Principal, 'organizationId' | 'agentId'>, agentId: string): Promise<AgentRow> {
    if (principal.agentId !== null && principal.agentId !== agentId.toLowerCase()) throw AppError.notFound('agent');
    return this.requireInOrganization(principal.organizationId, agentId);
  }

  /** The organisation's agents as GET /agent renders each, oldest first. */
  async listForOrganization(organizationId: string): Promise<AgentView[]> {
    const rows = await this.repo.listByOrganization(organizationId);
    return Promise.all(rows.map((r) => this.view(r.id)));
  }

  /** The agent as GET /agent renders it, with today's and this month's usage (UTC windows). */
  async view(agentId: string, now = new Date()): Promise<AgentView> {
    const agent = await this.require(agentId);
    const { dayStart, monthStart } = policyWindows(now);
    const usage = await this.usage().usage(agentId, dayStart, monthStart);
    return {
      id: agent.id,
      slug: agent.slug,
      name: agent.name,
      organizationId: agent.organizationId,
      ownerAddress: agent.ownerAddress,
      paused: agent.paused,
      signer: { enabled: agent.signerEnabled, address: agent.signerAddress },
      policy: renderPolicy(agent.policy),
      usage: { usedToday: formatAmount(usage.usedToday), usedThisMonth: formatAmount(usage.usedThisMonth) },
      createdAt: agent.createdAt.toISOString(),
      updatedAt: agent.updatedAt.toISOString(),
    };
  }

  /**
   * Signer and owner USDC from the chain; `balance` subtracts the open reservations not yet settled on
   * chain (never below 0; see readSignerBalance).
   */
  async balance(agentId: string): Promise<BalanceView> {
    const agent = await this.require(agentId);
    if (!agent.signerAddress) throw new AppError('signer_required', 'This agent has no session signer');
    const [signer, owner] = await Promise.all([readSignerBalance(this.chain, this.cursors, agent.signerAddress), this.chain.read('owner balance', () => this.chain.usdc.balanceOf(agent.ownerAddress!))]);
    const onChain = signer.onChain;
    const { dayStart, monthStart } = policyWindows(new Date());
    const usage = await this.usage().usage(agentId, dayStart, monthStart, signer.settledNonces ?? [], signer.trustedBlock);
    const available = onChain > usage.open ? onChain - usage.open : 0n;
    return {
      address: agent.signerAddress,
      balance: formatAmount(available),
      onChainBalance: formatAmount(onChain),
      ownerAddress: agent.ownerAddress,
      ownerBalance: formatAmount(owner),
      currency: 'USDC',
    };
  }

  /**
   * Replaces the whole policy (absent fields are unset; docs/api.md agent:policy:set).
   * @throws AppError invalid_request naming the field for a malformed amount, mode, time or recipient.
   */
  async setPolicy(agentId: string, input: PolicyInput, by?: ConsoleActor): Promise<AgentView> {
    await this.require(agentId);
    const policy = parsePolicy(input, this.config.maxAmountUnits);
    await this.tx(async () => {
      // Under the agent's row lock, so the comparison is with the policy this write replaces.
      const agent = (await this.repo.lock(agentId))!;
      if (by && policyRaises(agent.policy, policy).length > 0) await this.useConsent(agent, by, 'raise_policy', renderPolicy(policy));
      await this.repo.setPolicy(agentId, policy);
    });
    return this.view(agentId);
  }

  /**
   * Pauses or resumes the agent (operator CLI, console). Pausing also fails its reserved, still unsigned
   * payments (`agent_paused`) in the same transaction; signed ones settle or expire. From the console
   * (`by`), resuming a paused agent needs its owner (DESIGN §19).
   * @throws AppError not_found; 403 forbidden (`agent_owner_consent_required`).
   */
  async setPaused(agentId: string, paused: boolean, by?: ConsoleActor): Promise<AgentView> {
    await this.require(agentId);
    await this.tx(async () => {
      const agent = (await this.repo.lock(agentId))!;
      if (by && !paused && agent.paused) await this.useConsent(agent, by, 'resume', {});
      await this.repo.setPaused(agentId, paused);
      if (paused) await this.hooks.spendingStopped(agentId, 'agent_paused');
    });
    return this.view(agentId);
  }

  /**
   * Enables or disables the session signer (operator CLI). Disabling fails the agent's reserved, still
   * unsigned payments (`signer_disabled`) with the flag, then sweeps the whole float back to the owner
   * (self-custodial, docs/architecture.md §13); signed payments settle or expire.
   * @returns the agent, and the sweep's transaction hash when one was sent.
   */
  async setSignerEnabled(agentId: string, enabled: boolean): Promise<{ agent: AgentView; sweepTxHash: string | null }> {
    const agent = await this.require(agentId);
    if (!agent.signerAddress) throw new AppError('signer_required', 'This agent has no session signer');
    await this.tx(async () => {
      await this.repo.setSignerEnabled(agentId, enabled);
      if (!enabled) await this.hooks.spendingStopped(agentId, 'signer_disabled');
    });
    const sweepTxHash = enabled ? null : await this.sweep(agent);
    return { agent: await this.view(agentId), sweepTxHash };
  }

  /**
   * The owner's EIP-712 EnableSigner{agentId, signer, enabled, nonce, deadline} (the owner page posts
   * it). The signature must recover to `ownerAddress`, name this agent's signer, be unexpired (deadline
   * at most an hour ahead) and use a fresh nonce.
   * @throws AppError not_found; 400 invalid_request with details.reason (bad_signature, expired, nonce_used).
   */
  async enableSignerBySig(agentId: string, body: OwnerSigned & { enabled: boolean }): Promise<{ agent: AgentView; sweepTxHash: string | null }> {
    const agent = await this.require(agentId);
    const message = { agentId, signer: agent.signerAddress ?? '0x0000000000000000000000000000000000000000', enabled: body.enabled, nonce: body.nonce, deadline: BigInt(body.deadline) };
    this.checkOwnerSignature(agent, ENABLE_SIGNER_TYPES, message, body);
    const fresh = await this.tx(async () => {
      if (!(await this.repo.useOwnerNonce(agentId, body.nonce, 'enable_signer'))) return false;
      await this.repo.setSignerEnabled(agentId, body.enabled);
      if (!body.enabled) await this.hooks.spendingStopped(agentId, 'signer_disabled');
      return true;
    });
    if (!fresh) throw new AppError('invalid_request', 'This signature was already used', { reason: 'nonce_used' });
    const sweepTxHash = body.enabled ? null : await this.sweep(agent);
    return { agent: await this.view(agentId), sweepTxHash };
  }

  /**
   * The owner's EIP-712 Withdraw{agentId, amount, nonce, deadline}: moves `amount` of the float to
   * `ownerAddress` as the signer's transferWithAuthorization, relayed; outside the spending policy.
   * @throws AppError 400 invalid_request (bad_signature, expired, nonce_used, insufficient_balance).
   */
  async withdrawBySig(agentId: string, body: OwnerSigned & { amount: string }): Promise<{ txHash: string; amount: string; to: string }> {
    const agent = await this.require(agentId);
    let units: bigint;
    try {
      units = parseAmount(body.amount, this.config.maxAmountUnits);
    } catch (err) {
      throw AppError.invalidParam('amount', (err as Error).message);
    }
    this.checkOwnerSignature(agent, WITHDRAW_TYPES, { agentId, amount: units, nonce: body.nonce, deadline: BigInt(body.deadline) }, body);
    if (!agent.signerAddress) throw new AppError('signer_required', 'This agent has no session signer');
    const onChain = await this.chain.usdc.balanceOf(agent.signerAddress);
    if (units > onChain) {
      throw new AppError('invalid_request', 'The signer holds less than the amount', { reason: 'insufficient_balance', balance: formatAmount(onChain) });
    }
    const fresh = await this.tx(() => this.repo.useOwnerNonce(agentId, body.nonce, 'withdraw'));
    if (!fresh) throw new AppError('invalid_request', 'This signature was already used', { reason: 'nonce_used' });
    // One live relay per intent (DESIGN §22): the intent is this owner-signed Withdraw (its single-use nonce).
    const txHash = await this.transferFromSigner(agent, agent.ownerAddress, units, 'withdraw', `${agentId}:${body.nonce.toLowerCase()}`);
    return { txHash, amount: formatAmount(units), to: agent.ownerAddress };
  }

  /**
   * Local chain only: `owner` (the demo owner wallet) sends `amount` USDC to the agent's signer, at
   * most SIGNER_FLOAT_MAX in the signer afterwards.
   * @throws AppError invalid_request (amount, float maximum).
   */
  async fund(agentId: string, amount: string, owner: Wallet): Promise<{ txHash: string; signerAddress: string; balance: string }> {
    const agent = await this.require(agentId);
    if (!agent.signerAddress) throw new AppError('signer_required', 'This agent has no session signer');
    let units: bigint;
    try {
      units = parseAmount(amount, this.config.maxAmountUnits);
    } catch (err) {
      throw AppError.invalidParam('amount', (err as Error).message);
    }
    const max = parseAmount(this.config.env.SIGNER_FLOAT_MAX);
    const current = await this.chain.usdc.balanceOf(agent.signerAddress);
    if (current + units > max) {
      throw new AppError('invalid_request', `The signer may hold at most ${formatAmount(max)} USDC (SIGNER_FLOAT_MAX)`, { reason: 'float_max', balance: formatAmount(current) });
    }
    const txHash = await this.chain.usdc.transfer(owner.connect(this.chain.provider), agent.signerAddress, units);
    return { txHash, signerAddress: agent.signerAddress, balance: formatAmount(current + units) };
  }

  /**
   * From the console, an agent key that may spend (`agent:pay`, `agent:escrow:fund`, or the default
   * set) needs the agent owner: its session or its AgentConsent `create_pay_key` over `{scopes}`
   * (sorted); the consent's nonce is used here (DESIGN §19).
   * @throws AppError not_found; 403 forbidden (`agent_owner_consent_required`).
   */
  async authorizeAgentKey(agentId: string, scopes: string[], by: ConsoleActor): Promise<void> {
    const granted = expandScopes(scopes);
    if (!SPENDING_SCOPES.some((s) => granted.has(s))) return;
    await this.require(agentId);
    await this.tx(async () => {
      const agent = (await this.repo.lock(agentId))!;
      await this.useConsent(agent, by, 'create_pay_key', { scopes: [...scopes].sort() });
    });
  }

  /**
   * Inside the caller's transaction: nothing when `by` is the agent's owner; else its AgentConsent for
   * `action` over `payload` must verify and its nonce is used (single use, in this transaction).
   */
  private async useConsent(agent: AgentRow, by: ConsoleActor, action: ConsentAction, payload: unknown): Promise<void> {
    if (getAddress(by.address) === getAddress(agent.ownerAddress)) return;
    this.verifyConsent(agent.id, agent.ownerAddress, action, payload, by.consent);
    if (!(await this.repo.useOwnerNonce(agent.id, by.consent!.nonce, 'consent'))) throw this.consentRefusal(agent.id, agent.ownerAddress, action, payload, 'nonce_used');
  }

  /**
   * Checks an AgentConsent{agentId, action, payloadHash, nonce, deadline} signed by `ownerAddress`
   * (deadline in the future, at most an hour ahead). CPU only.
   * @throws AppError 403 forbidden (`agent_owner_consent_required`, `details.problem` when one was sent).
   */
  private verifyConsent(agentId: string, ownerAddress: string, action: ConsentAction, payload: unknown, consent: OwnerSigned | undefined): void {
    if (!consent) throw this.consentRefusal(agentId, ownerAddress, action, payload);
    const now = Math.floor(Date.now() / 1000);
    if (!isHexString(consent.nonce, 32) || typeof consent.signature !== 'string') throw this.consentRefusal(agentId, ownerAddress, action, payload, 'malformed');
    if (!Number.isSafeInteger(consent.deadline) || consent.deadline < now || consent.deadline > now + OWNER_MESSAGE_MAX_SECONDS) throw this.consentRefusal(agentId, ownerAddress, action, payload, 'expired');
    let recovered = '';
    try {
      recovered = verifyTypedData(ownerDomain(this.chain.chainId), AGENT_CONSENT_TYPES, { agentId, action, payloadHash: consentPayloadHash(payload), nonce: consent.nonce, deadline: BigInt(consent.deadline) }, consent.signature);
    } catch {
      /* a malformed signature is not the owner's */
    }
    if (!recovered || getAddress(recovered) !== getAddress(ownerAddress)) throw this.consentRefusal(agentId, ownerAddress, action, payload, 'bad_signature');
  }

  /** 403 forbidden `agent_owner_consent_required` with the typed data the owner would sign (fresh nonce, 10 min). */
  private consentRefusal(agentId: string, ownerAddress: string, action: ConsentAction, payload: unknown, problem?: string): AppError {
    const typedData = consentTypedData(this.chain.chainId, {
      agentId,
      action,
      payloadHash: consentPayloadHash(payload),
      nonce: hexlify(randomBytes(32)),
      deadline: Math.floor(Date.now() / 1000) + CONSENT_OFFER_SECONDS,
    });
    return new AppError('forbidden', "This needs the agent owner's own console session or its signed AgentConsent", {
      reason: 'agent_owner_consent_required',
      action,
      ownerAddress: getAddress(ownerAddress),
      ...(problem ? { problem } : {}),
      typedData,
    } satisfies AgentConsentRefusal);
  }

  private checkOwnerSignature(agent: AgentRow, types: Record<string, Array<{ name: string; type: string }>>, message: Record<string, unknown>, body: OwnerSigned): void {
    if (!isHexString(body.nonce, 32)) throw AppError.invalidParam('nonce', 'must be 32 bytes of 0x hex');
    const now = Math.floor(Date.now() / 1000);
    if (!Number.isSafeInteger(body.deadline) || body.deadline < now) throw new AppError('invalid_request', 'The signature has expired', { reason: 'expired' });
    if (body.deadline > now + OWNER_MESSAGE_MAX_SECONDS) throw AppError.invalidParam('deadline', 'must be at most one hour ahead');
    let recovered: string;
    try {
      recovered = verifyTypedData(ownerDomain(this.chain.chainId), types, message, body.signature);
    } catch {
      throw new AppError('invalid_request', 'The signature is malformed', { reason: 'bad_signature' });
    }
    if (getAddress(recovered) !== getAddress(agent.ownerAddress)) {
      throw new AppError('invalid_request', "The signature is not the owner's", { reason: 'bad_signature' });
    }
  }

  /**
   * Sweeps the signer's whole USDC balance to the owner; null when there is nothing to sweep. One live
   * relay per intent (DESIGN §22): a sweep repeated while one is live (a retried disable, a second
   * process) resumes that sweep instead of signing a second; the intent is the agent's sweep after its
   * last mined one: reference `<agentId>:sweep`, then `<agentId>:sweep:<id of the mined sweep row>`, so
   * concurrent callers compute the same reference and a later sweep (new float) is a new intent.
   */
  private async sweep(agent: AgentRow): Promise<string | null> {
    const balance = await this.chain.usdc.balanceOf(agent.signerAddress!);
    if (balance === 0n) return null;
    let reference = `${agent.id}:sweep`;
    for (let live = await this.relayer.liveRelay('sweep', reference); live?.mined; live = await this.relayer.liveRelay('sweep', reference)) {
      reference = `${agent.id}:sweep:${live.id}`;
    }
    return this.transferFromSigner(agent, agent.ownerAddress, balance, 'sweep', reference);
  }

  private async transferFromSigner(agent: AgentRow, to: string, amount: bigint, purpose: string, reference: string): Promise<string> {
    const live = await this.relayer.liveRelay(purpose, reference);
    if (live) return this.awaitTransfer(agent, purpose, await this.relayer.resume(live.id));
    const signer = await this.vault.wallet(agent.id);
    const now = await this.chain.headTimestamp();
    const auth = await this.chain.usdc.signTransferAuthorization(signer, { to, value: amount, validBefore: BigInt(now + 600), nonce: hexlify(randomBytes(32)) });
    return this.awaitTransfer(agent, purpose, await this.relayer.relay({ to: this.chain.usdc.address, data: this.chain.usdc.encodeTransferWithAuthorization(auth), purpose, reference }));
  }

  /**
   * Waits (bounded by CHAIN_WAIT_MS, docs/architecture.md §18) for a float transfer's relay: the answer
   * is its hash, mined or still pending (pending is not failed).
   * @returns the mined hash, or the broadcast one when not mined in time.
   * @throws AppError 409 invalid_request `details.reason: "reverted"` (`txHash`) when the transfer was
   *   mined and reverted (the float moved after the check, e.g. spent by a payment): nothing moved, and
   *   the answer must not say it did.
   */
  private async awaitTransfer(agent: AgentRow, purpose: string, relayed: { relayTxId: string; txHash: string }): Promise<string> {
    const mined = await this.relayer.waitMined(relayed.relayTxId, this.config.env.CHAIN_WAIT_MS);
    const txHash = mined?.hash ?? relayed.txHash;
    if (mined && mined.status !== 1) {
      this.logger.warn({ agentId: agent.id, purpose, txHash }, 'float transfer reverted on chain; nothing moved');
      const again = purpose === 'sweep' ? 'the signer is disabled; disable it again to sweep what it holds' : 'sign a new Withdraw';
      throw new AppError('invalid_request', `The transfer reverted on chain and nothing moved: ${again}`, { reason: 'reverted', txHash }, 409);
    }
    if (mined) this.logger.log({ agentId: agent.id, purpose, txHash }, 'float moved to the owner');
    else this.logger.warn({ agentId: agent.id, purpose, txHash }, 'float transfer broadcast, not mined within CHAIN_WAIT_MS');
    return txHash;
  }
}

/** Validates and normalises policy input; amounts to base-unit strings, recipients lowercased. */
export function parsePolicy(input: PolicyInput, maxUnits: bigint): StoredPolicy {
  const policy: StoredPolicy = { mode: 'autonomous' };
  for (const field of ['perTransactionMax', 'dailyLimit', 'monthlyLimit', 'approvalThreshold'] as const) {
    const v = input[field];
    if (v === undefined) continue;
    try {
      policy[field] = parseAmount(v, maxUnits * 100_000n).toString();
    } catch (err) {
      throw AppError.invalidParam(field, (err as Error).message);
    }
  }
  if (input.mode !== undefined) {
    if (input.mode !== 'autonomous' && input.mode !== 'mandate') throw AppError.invalidParam('mode', 'must be autonomous or mandate');
    policy.mode = input.mode;
  }
  for (const field of ['validFrom', 'expiresAt'] as const) {
    const v = input[field];
    if (v === undefined) continue;
    if (Number.isNaN(Date.parse(v))) throw AppError.invalidParam(field, 'must be an ISO-8601 time');
    policy[field] = new Date(v).toISOString();
  }
  if (input.allowedRecipients !== undefined) {
    const list = input.allowedRecipients.map((r) => r.trim().toLowerCase()).filter((r) => r.length > 0);
    for (const r of list) {
      if (!/^0x[0-9a-f]{40}$/.test(r) && !/^[a-z0-9](?:[a-z0-9-]{1,38}[a-z0-9])?$/.test(r)) {
        throw AppError.invalidParam('allowedRecipients', `${r} is neither a handle, a slug nor an address`);
      }
    }
    policy.allowedRecipients = list;
  }
  return policy;
}
