import { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { AppError } from '../errors/app-error';

/**
 * Applies newest-first keyset pagination on (created_at, id) to a query over `alias`, scoped to
 * one organisation. Fetches `limit + 1` rows so the caller can tell `hasMore`.
 * @throws AppError invalid_request (param starting_after) when the cursor is not a row this organisation can see (DESIGN §6; never 404).
 */
export async function keysetPage<E extends ObjectLiteral>(
  qb: SelectQueryBuilder<E>,
  alias: string,
  organizationId: string,
  limit: number,
  startingAfter?: string,
): Promise<E[]> {
  qb.andWhere(`${alias}.organization_id = :orgId`, { orgId: organizationId });
  if (startingAfter) {
    const cursor = await qb
      .clone()
      .select([`${alias}.id`, `${alias}.createdAt`])
      .andWhere(`${alias}.id = :cursorId`, { cursorId: startingAfter })
      .getOne();
    if (!cursor) throw AppError.invalidParam('starting_after', 'is not an id from a previous page of this list');
    qb.andWhere(`(${alias}.created_at, ${alias}.id) < (:cursorAt, :cursorId)`, {
      cursorAt: (cursor as unknown as { createdAt: Date }).createdAt,
      cursorId: startingAfter,
    });
  }
  return qb.orderBy(`${alias}.created_at`, 'DESC').addOrderBy(`${alias}.id`, 'DESC').take(limit + 1).getMany();
}
