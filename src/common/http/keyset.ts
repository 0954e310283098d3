import { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { AppError } from '../errors/app-error';

/** Which rows a caller may see, as a WHERE condition on the list's alias (e.g. `c.organization_id = :org`). */
export interface Visibility {
  sql: string;
  params: Record<string, unknown>;
}

/**
 * Newest-first keyset pagination on (created_at, id) (DESIGN §6). `newQuery` makes a fresh query
 * over `alias`; `visible` limits it to what the caller may see; `filter` adds the list's own filters.
 * The cursor is looked up under visibility alone, so a row whose status changed mid-walk still
 * works as a cursor. Fetches `limit + 1` rows so the caller can tell `hasMore`.
 * @throws AppError invalid_request (param starting_after) when the cursor is not a row the caller can see (never 404).
 */
export async function keysetPage<E extends ObjectLiteral>(
  newQuery: () => SelectQueryBuilder<E>,
  alias: string,
  visible: Visibility,
  limit: number,
  startingAfter?: string,
  filter: (qb: SelectQueryBuilder<E>) => void = () => {},
): Promise<E[]> {
  const qb = newQuery().where(visible.sql, visible.params);
  filter(qb);
  if (startingAfter) {
    const cursor = await newQuery()
      .select([`${alias}.id`, `${alias}.createdAt`])
      .where(visible.sql, visible.params)
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
