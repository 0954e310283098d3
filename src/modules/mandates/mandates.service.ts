import { Injectable } from '@nestjs/common';
import { getAddress, isHexString, verifyTypedData } from 'ethers';
import { v7 as uuidv7 } from 'uuid';
import { AmountFormatError, formatAmount, parseAmount } from '@lib/money';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { AgentsService } from '../agents/agents.service';
import { ownerDomain, REVOKE_MANDATE_TYPES } from '../agents/owner-messages';
import { MandateTerms, verifyMandateCredential } from './mandate-credentials';
import { Mandate } from './mandate.entity';
import { MandateAgent, MandatesRepository } from './mandates.repository';
import { ModuleRef } from '@nestjs/core';
import { MandateUsageSource } from './mandate-usage.port';
import { latePort } from '../../common/late-port';

/** Mandate statuses, computed on read (docs/architecture.md §14). */
export const MANDATE_STATUSES = ['active', 'exhausted', 'expired', 'revoked'] as const;
export type MandateStatus = (typeof MANDATE_STATUSES)[number];

/** RevokeMandate{mandateId, nonce, deadline} lives with the other owner messages (the console's browser bundle signs it). */
export { REVOKE_MANDATE_TYPES };

/** Longest validity of an owner's revocation signature, as the other owner messages (one hour). */
const OWNER_MESSAGE_MAX_SECONDS = 3600;

/** A mandate as the API renders it: amounts are USDC decimal text ("20.00"); usedAmount and status are computed. */
export interface MandateView {
  id: string;
  payees: string[];
  maxAmountPerPayment: string;
  totalAmount: string;
  usedAmount: string;
  currency: 'USDC';
  expiresAt: string;
  description: string;
  status: MandateStatus;
  credential: Record<string, unknown>;
  revokedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** POST /mandates body: the terms (base units as decimal strings) and the owner-signed credential. */
export interface CreateMandateInput extends MandateTerms {
  credential: unknown;
}

/** POST /mandates/{id}/revoke body: the owner's EIP-712 RevokeMandate signature. */
export interface RevokeMandateInput {
  nonce: string;
  deadline: number;
  signature: string;
}

/**
 * AP2 intent mandates (docs/architecture.md §14): created from an owner-signed credential (EIP-712
 * profile of v0.1 or v0.2 SD-JWT), listed with usage computed from payments, revoked by the owner or
 * the operator, and {@link cover} finds the mandate a mandate-mode spend runs under.
 */
@Injectable()
export class MandatesService {
  constructor(
    private readonly repo: MandatesRepository,
    private readonly agents: AgentsService,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
    private readonly moduleRef: ModuleRef,
  ) {}

  private get chainId(): number {
    return this.config.env.CHAIN_ID;
  }

  /**
   * POST /mandates: verifies the credential against the body's terms and the agent's owner (local
   * crypto only), then stores it with its nonce (single use per agent).
   * @throws AppError 400 invalid_request: field errors (details.fields), expired, nonce_used, and the
   *   credential reasons of {@link verifyMandateCredential}; not_found when the agent is gone.
   */
  async create(principal: Principal, input: CreateMandateInput): Promise<MandateView> {
    const agent = await this.requireAgent(principal.agentId!);
    const terms = this.terms(input);
    const now = new Date();
    if (Date.parse(terms.expiresAt) <= now.getTime()) throw new AppError('invalid_request', 'The mandate has expired', { reason: 'expired' });
    const verified = await verifyMandateCredential(input.credential, terms, { chainId: this.chainId, agentSlug: agent.slug, ownerAddress: agent.ownerAddress, now });
    const credential = verified.format === 'sd-jwt' ? { format: 'sd-jwt', token: (input.credential as { token: string }).token } : (input.credential as Record<string, unknown>);
    const mandate = Object.assign(new Mandate(), {
      id: uuidv7(),
      agentId: agent.id,
      organizationId: agent.organizationId,
      payees: terms.payees.map((p) => p.toLowerCase()),
      maxAmountPerPayment: parseAmount(terms.maxAmountPerPayment),
      totalAmount: parseAmount(terms.totalAmount),
      expiresAt: new Date(terms.expiresAt),
      description: terms.description,
      format: verified.format,
      nonce: verified.nonce,
      credential,
      revokedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    if (!(await this.repo.insert(mandate))) throw new AppError('invalid_request', 'This mandate nonce was already used for this agent', { reason: 'nonce_used' });
    return this.render(mandate, 0n, now);
  }

  /** GET /mandates: the agent's mandates, newest first (docs/architecture.md §6). @throws AppError 400 unknown cursor. */
  async list(principal: Principal, q: { limit?: number; startingAfter?: string }): Promise<ListPage<MandateView>> {
    return this.listForAgent(principal.agentId!, q);
  }

  /**
   * The mandates of agent `agentId`, newest first (GET /mandates for its key; the console's agent
   * page once AgentsService.requireOwned has checked the session may see it).
   */
  async listForAgent(agentId: string, q: { limit?: number; startingAfter?: string }): Promise<ListPage<MandateView>> {
    const limit = q.limit ?? 10;
    const rows = await this.repo.list(agentId, limit, q.startingAfter);
    const used = await this.usage().usedAmounts(rows.map((r) => r.id));
    const now = new Date();
    return toPage(rows, limit, (m) => this.render(m, used.get(m.id) ?? 0n, now));
  }

  /** GET /mandates/{id} for the agent that holds it. @throws AppError not_found. */
  async get(principal: Principal, id: string): Promise<MandateView> {
    const m = await this.repo.findById(id);
    if (!m || m.agentId !== principal.agentId) throw AppError.notFound('mandate');
    return this.view(m);
  }

  /**
   * POST /mandates/{id}/revoke: the owner's EIP-712 RevokeMandate{mandateId, nonce, deadline} in the
   * owner domain ("Payments Control Plane Agents", version 1, chainId), single-use nonce, deadline at
   * most an hour ahead. Spends after the commit no longer find the mandate.
   * @throws AppError not_found; 400 invalid_request (bad_signature, expired, nonce_used); 409 when already revoked.
   */
  async revokeBySig(id: string, body: RevokeMandateInput): Promise<MandateView> {
    const m = await this.repo.findById(id);
    if (!m) throw AppError.notFound('mandate');
    const agent = await this.requireAgent(m.agentId);
    if (!isHexString(body.nonce, 32)) throw AppError.invalidParam('nonce', 'must be 32 bytes of 0x hex');
    const nowSeconds = Math.floor(Date.now() / 1000);
    if (!Number.isSafeInteger(body.deadline) || body.deadline < nowSeconds) throw new AppError('invalid_request', 'The signature has expired', { reason: 'expired' });
    if (body.deadline > nowSeconds + OWNER_MESSAGE_MAX_SECONDS) throw AppError.invalidParam('deadline', 'must be at most one hour ahead');
    let recovered: string;
    try {
      recovered = verifyTypedData(ownerDomain(this.chainId), REVOKE_MANDATE_TYPES, { mandateId: id, nonce: body.nonce, deadline: BigInt(body.deadline) }, body.signature);
    } catch {
      throw new AppError('invalid_request', 'The signature is malformed', { reason: 'bad_signature' });
    }
    if (getAddress(recovered) !== getAddress(agent.ownerAddress)) throw new AppError('invalid_request', "The signature is not the owner's", { reason: 'bad_signature' });
    return this.revoke(id, async () => {
      if (!(await this.agents.useOwnerNonce(agent.id, body.nonce, 'revoke_mandate'))) {
        throw new AppError('invalid_request', 'This signature was already used', { reason: 'nonce_used' });
      }
    });
  }

  /** Operator revocation (CLI `mandate:revoke <id>`). @throws AppError not_found; 409 when already revoked. */
  revokeByOperator(id: string): Promise<MandateView> {
    return this.revoke(id, async () => {});
  }

  /**
   * The mandate a mandate-mode spend of `amount` base units to `payee` runs under: the covering
   * active mandate expiring first, or null (→ mandate_required). Must run inside the spend's
   * transaction under the agent row lock (docs/architecture.md §13, §14).
   */
  async cover(agentId: string, payee: { handle: string; address: string }, amount: bigint, now: Date): Promise<string | null> {
    // The candidates share-locked (a revocation waits for this spend), then their usage from the
    // payments module; the agent row lock keeps the usage still until the payment insert (§13).
    const candidates = await this.repo.coveringCandidates(agentId, payee.handle, payee.address, amount, now);
    if (!candidates.length) return null;
    const used = await this.usage().usedAmounts(candidates.map((c) => c.id));
    return candidates.find((c) => c.totalAmount >= amount + (used.get(c.id) ?? 0n))?.id ?? null;
  }

  /** The payments module (which sums the usage over its table) depends on mandates: resolved at call time. */
  private readonly usage = latePort(() => this.moduleRef, MandateUsageSource);

  private async revoke(id: string, check: () => Promise<void>): Promise<MandateView> {
    const m = await (this.txHost as TxHost).withTransaction(async () => {
      const locked = await this.repo.lock(id);
      if (!locked) throw AppError.notFound('mandate');
      if (locked.revokedAt) {
        throw new AppError('invalid_request', 'This mandate is already revoked', { status: 'revoked', allowed: ['active', 'exhausted', 'expired'] }, 409);
      }
      await check();
      const at = new Date();
      await this.repo.revoke(id, at);
      return Object.assign(locked, { revokedAt: at, updatedAt: at });
    });
    return this.view(m);
  }

  private async view(m: Mandate): Promise<MandateView> {
    const used = await this.usage().usedAmounts([m.id]);
    return this.render(m, used.get(m.id) ?? 0n, new Date());
  }

  private requireAgent(id: string): Promise<MandateAgent> {
    return this.agents.require(id);
  }

  /**
   * Validates the body's terms beyond the DTO: amounts canonical USDC decimal text, > 0 and ≤
   * MAX_AMOUNT (docs/architecture.md §6), max ≤ total, expiresAt ISO-8601.
   * @throws AppError 400 invalid_request naming the field.
   */
  private terms(input: CreateMandateInput): MandateTerms {
    const max = this.amount('maxAmountPerPayment', input.maxAmountPerPayment);
    const total = this.amount('totalAmount', input.totalAmount);
    if (max > total) throw AppError.invalidParam('maxAmountPerPayment', 'must not exceed totalAmount');
    if (Number.isNaN(Date.parse(input.expiresAt))) throw AppError.invalidParam('expiresAt', 'must be an ISO-8601 time');
    return { payees: input.payees, maxAmountPerPayment: input.maxAmountPerPayment, totalAmount: input.totalAmount, expiresAt: input.expiresAt, description: input.description };
  }

  private amount(param: string, text: string): bigint {
    try {
      return parseAmount(text, this.config.maxAmountUnits);
    } catch (err) {
      if (err instanceof AmountFormatError) throw AppError.invalidParam(param, err.message);
      throw err;
    }
  }

  private render(m: Mandate, used: bigint, now: Date): MandateView {
    const status: MandateStatus = m.revokedAt ? 'revoked' : m.expiresAt.getTime() <= now.getTime() ? 'expired' : used >= m.totalAmount ? 'exhausted' : 'active';
    return {
      id: m.id,
      payees: m.payees,
      maxAmountPerPayment: formatAmount(m.maxAmountPerPayment),
      totalAmount: formatAmount(m.totalAmount),
      usedAmount: formatAmount(used),
      currency: 'USDC',
      expiresAt: m.expiresAt.toISOString(),
      description: m.description,
      status,
      credential: m.credential,
      revokedAt: m.revokedAt ? m.revokedAt.toISOString() : null,
      createdAt: m.createdAt.toISOString(),
      updatedAt: m.updatedAt.toISOString(),
    };
  }
}
