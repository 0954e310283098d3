import { Injectable } from '@nestjs/common';
import { AmountFormatError, parseAmount } from '@lib/money';
import { v7 as uuidv7, validate as isUuid } from 'uuid';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import { assertMetadataBounds } from '../../common/validation/metadata';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CreateOfferingDto, OfferingDto, UpdateOfferingDto } from './dto/offering.dto';
import { toOfferingDto } from './offerings.mapper';
import { Offering } from './offerings.entity';
import { OfferingsRepository } from './offerings.repository';

/** What a checkout or an invoice line takes from an offering at the moment it is sold. */
export interface OfferingTerms {
  id: string;
  name: string;
  description: string | null;
  /** Unit price in USDC base units. */
  amountUnits: bigint;
  escrowTemplateId: string;
}

/**
 * RFC 7396 JSON merge of `patch` into `target`: keys set to null are removed, nested objects are
 * merged, anything else replaces. Returns a new object (null when the result is empty and `patch` was null).
 */
export function mergePatch(target: Record<string, unknown> | null, patch: Record<string, unknown> | null): Record<string, unknown> | null {
  if (patch === null) return null;
  const out: Record<string, unknown> = { ...(target ?? {}) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (typeof v === 'object' && !Array.isArray(v) && typeof out[k] === 'object' && out[k] !== null && !Array.isArray(out[k])) {
      out[k] = mergePatch(out[k] as Record<string, unknown>, v as Record<string, unknown>);
    } else out[k] = v;
  }
  return out;
}

/** The merchant's catalogue (docs/architecture.md §11; docs/api.md offerings endpoints). */
@Injectable()
export class OfferingsService {
  constructor(
    private readonly repo: OfferingsRepository,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
  ) {}

  /** @throws AppError invalid_request for an amount over MAX_AMOUNT or oversized metadata. */
  async create(principal: Principal, input: CreateOfferingDto): Promise<OfferingDto> {
    const metadata = input.metadata ?? null;
    assertMetadataBounds('metadata', metadata);
    const offering = Object.assign(new Offering(), {
      id: uuidv7(),
      organizationId: principal.organizationId,
      name: input.name,
      description: input.description ?? null,
      amountUnits: this.amount(input.amount),
      escrowTemplateId: input.escrowTemplateId ?? 'custom',
      active: input.active ?? true,
      metadata,
    });
    const saved = await (this.txHost as TxHost).withTransaction(() => this.repo.insert(offering));
    return toOfferingDto(saved);
  }

  /** @throws AppError not_found when absent or another organisation's. */
  async get(principal: Principal, id: string): Promise<OfferingDto> {
    const o = await this.repo.findForOrganization(principal.organizationId, id);
    if (!o) throw AppError.notFound('offering');
    return toOfferingDto(o);
  }

  /**
   * JSON merge of `patch` (docs/architecture.md §11): absent fields keep their value, `null`
   * clears description/metadata, metadata merges key by key. Binds later checkouts only: a
   * checkout or invoice copies the price when it is made. Runs under the offering's row lock,
   * so concurrent patches of different fields both land.
   * @throws AppError not_found; invalid_request for an amount over MAX_AMOUNT or oversized metadata.
   */
  async update(principal: Principal, id: string, patch: UpdateOfferingDto): Promise<OfferingDto> {
    const amountUnits = patch.amount !== undefined ? this.amount(patch.amount) : undefined;
    return (this.txHost as TxHost).withTransaction(async () => {
      const o = await this.repo.findForOrganization(principal.organizationId, id, true);
      if (!o) throw AppError.notFound('offering');
      if (patch.name !== undefined) o.name = patch.name;
      if (patch.description !== undefined) o.description = patch.description;
      if (amountUnits !== undefined) o.amountUnits = amountUnits;
      if (patch.escrowTemplateId !== undefined) o.escrowTemplateId = patch.escrowTemplateId;
      if (patch.active !== undefined) o.active = patch.active;
      if (patch.metadata !== undefined) {
        o.metadata = mergePatch(o.metadata, patch.metadata);
        if (o.metadata && Object.keys(o.metadata).length === 0) o.metadata = null;
        assertMetadataBounds('metadata', o.metadata);
      }
      return toOfferingDto(await this.repo.save(o));
    });
  }

  async list(principal: Principal, q: { limit?: number; startingAfter?: string; active?: boolean }): Promise<ListPage<OfferingDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.repo.list(principal.organizationId, limit, q.startingAfter, q.active);
    return toPage(rows, limit, toOfferingDto);
  }

  /**
   * The terms of an active offering of this organisation, for a new checkout or invoice line.
   * @throws AppError invalid_request naming `param` when the offering is unknown, another
   *   organisation's, or archived (docs/architecture.md §11: 400 with details.param offeringId).
   */
  async activeTerms(organizationId: string, id: string, param = 'offeringId'): Promise<OfferingTerms> {
    const o = isUuid(id) ? await this.repo.findForOrganization(organizationId, id) : null;
    if (!o) throw AppError.invalidParam(param, 'is not an offering of this organisation', { param, reason: 'unknown_offering' });
    if (!o.active) throw AppError.invalidParam(param, 'is archived (active: false)', { param, reason: 'inactive_offering' });
    return { id: o.id, name: o.name, description: o.description, amountUnits: o.amountUnits, escrowTemplateId: o.escrowTemplateId };
  }

  private amount(text: string): bigint {
    try {
      return parseAmount(text, this.config.maxAmountUnits);
    } catch (err) {
      throw AppError.invalidParam('amount', err instanceof AmountFormatError ? err.message : 'is invalid');
    }
  }
}
