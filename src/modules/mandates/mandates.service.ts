import { Injectable } from '@nestjs/common';
import { formatAmount, parseAmount } from '@lib/money';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../../common/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import { AppConfig } from '../../config/app-config';
import { AgentSpendGate } from '../agents/agent-spend.service';
import type { CreateMandateDto, MandateDto } from './dto/mandate.dto';
import { MandateCredentialError, MandateTerms, verifyEip712Mandate, verifySdJwtMandate } from './mandate-credential';
import { MandateRow, MandatesRepository } from './mandates.repository';

/**
 * AP2 intent mandates (docs/architecture.md §14): an agent's owner signs the terms under which the agent,
 * in policy `mode: "mandate"`, may spend — payees, a per-payment maximum, a total and an expiry. A
 * mandate's used amount is never stored; {@link covering} computes it under the agent row lock in the
 * spend's own transaction (§13), so concurrent spends can never exceed `totalAmount`.
 */
@Injectable()
export class MandatesService {
  constructor(
    private readonly repo: MandatesRepository,
    private readonly agents: AgentSpendGate,
    private readonly config: AppConfig,
  ) {}

  /**
   * POST /mandates: verifies the owner's credential (EIP-712 v0.1 profile or SD-JWT v0.2) against the
   * body's terms and stores the mandate. Amounts: USDC decimal text in the body, base units inside.
   * @throws AppError 400 invalid_request with `details.reason` (expired, unsupported_format,
   *   bad_signature, wrong_signer, terms_mismatch, wrong_chain, malformed, nonce_used) or a named field.
   */
  async create(principal: Principal, body: CreateMandateDto): Promise<MandateDto> {
    const agent = await this.agents.find(principal.agentId!);
    if (!agent) throw AppError.notFound('agent');
    const terms = this.terms(agent.slug, body);
    if (terms.expiresAt.getTime() <= Date.now()) throw new AppError('invalid_request', 'expiresAt is in the past', { reason: 'expired', fields: [{ param: 'expiresAt', message: 'must be in the future' }] });
    const format = body.credential.format;
    let nonce: string;
    try {
      if (format === 'eip712') {
        nonce = verifyEip712Mandate(body.credential, terms, { maxAmountPerPayment: body.maxAmountPerPayment, totalAmount: body.totalAmount }, agent.ownerAddress, this.config.env.CHAIN_ID);
      } else if (format === 'sd-jwt') {
        nonce = await verifySdJwtMandate(body.credential.token, terms, agent.ownerAddress, this.config.env.CHAIN_ID);
      } else {
        throw new MandateCredentialError('unsupported_format', 'credential.format must be "eip712" or "sd-jwt"');
      }
    } catch (err) {
      if (err instanceof MandateCredentialError) throw new AppError('invalid_request', err.message, { reason: err.reason });
      throw err;
    }
    const id = uuidv7();
    const inserted = await this.repo.insert({
      id,
      agentId: agent.id,
      organizationId: agent.organizationId,
      payees: terms.payees,
      maxAmountPerPayment: terms.maxAmountPerPayment,
      totalAmount: terms.totalAmount,
      expiresAt: terms.expiresAt,
      description: terms.description,
      format,
      credential: body.credential,
      nonce,
    });
    if (!inserted) throw new AppError('invalid_request', 'This credential nonce was already used for this agent', { reason: 'nonce_used' });
    return this.toDto((await this.repo.find(agent.id, id))!);
  }

  /** GET /mandates: the agent's mandates, newest first. */
  async list(principal: Principal, q: { limit?: number; startingAfter?: string }): Promise<ListPage<MandateDto>> {
    const limit = q.limit ?? 10;
    return toPage(await this.repo.list(principal.agentId!, limit, q.startingAfter), limit, (m) => this.toDto(m));
  }

  /** GET /mandates/{id}. @throws AppError not_found. */
  async get(principal: Principal, id: string): Promise<MandateDto> {
    const m = await this.repo.find(principal.agentId!, id);
    if (!m) throw AppError.notFound('mandate');
    return this.toDto(m);
  }

  /**
   * Revokes a mandate (operator CLI `mandate:revoke`); payments already made under it stand.
   * @throws AppError not_found.
   */
  async revoke(agentId: string, id: string): Promise<MandateDto> {
    if (!(await this.repo.revoke(agentId, id))) throw AppError.notFound('mandate');
    return this.toDto((await this.repo.find(agentId, id))!);
  }

  /**
   * The active mandate covering `amount` (base units) to the payee (its handle and its address), the one
   * expiring first, or null. Call in the reservation's transaction under the agent row lock (§13).
   */
  covering(agentId: string, payee: { handle: string; address: string }, amount: bigint, now: Date): Promise<MandateRow | null> {
    return this.repo.covering(agentId, [payee.handle, payee.address], amount, now);
  }

  private terms(agentSlug: string, body: CreateMandateDto): MandateTerms {
    const amount = (field: 'maxAmountPerPayment' | 'totalAmount') => {
      try {
        return parseAmount(body[field], this.config.maxAmountUnits);
      } catch (err) {
        throw AppError.invalidParam(field, (err as Error).message);
      }
    };
    const maxAmountPerPayment = amount('maxAmountPerPayment');
    const totalAmount = amount('totalAmount');
    if (maxAmountPerPayment > totalAmount) throw AppError.invalidParam('maxAmountPerPayment', 'must not exceed totalAmount');
    const expiresAt = new Date(body.expiresAt);
    if (Number.isNaN(expiresAt.getTime())) throw AppError.invalidParam('expiresAt', 'must be an RFC 3339 date-time');
    return { agentSlug, payees: body.payees, maxAmountPerPayment, totalAmount, expiresAtText: body.expiresAt, expiresAt, description: body.description };
  }

  private toDto(m: MandateRow): MandateDto {
    const status = m.revokedAt ? 'revoked' : m.expiresAt.getTime() <= Date.now() ? 'expired' : m.usedAmount >= m.totalAmount ? 'exhausted' : 'active';
    return {
      id: m.id,
      payees: m.payees,
      maxAmountPerPayment: formatAmount(m.maxAmountPerPayment),
      totalAmount: formatAmount(m.totalAmount),
      usedAmount: formatAmount(m.usedAmount),
      expiresAt: m.expiresAt.toISOString(),
      description: m.description,
      status,
      credential: m.credential,
      createdAt: m.createdAt.toISOString(),
    };
  }
}
