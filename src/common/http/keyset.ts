import { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { AppError } from '../errors/app-error';

/** Which rows a caller may see, as a WHERE condition on the list's alias (e.g. `c.organization_id = :org`). */
export interface Visibility {
  sql: string;
  params: Record<string, unknown>;
}

/**
 * Newest-first keyset pagination on (created_at, id) (docs/architecture.md §6). `newQuery` makes a
 * fresh query over `alias`; `visible` limits it to what the caller may see; `filter` adds the
 * list's own filters. Fetches `limit + 1` rows so the caller can tell `hasMore`.
 *
 * The cursor row is compared inside SQL, as a row subquery on its id under visibility alone, so
 * its `created_at` keeps Postgres's microseconds (a JavaScript Date would cut them to
 * milliseconds and skip rows created in the same millisecond, such as one relay batch), and a
 * row whose status changed mid-walk still works as a cursor. One query on the common path: only
 * an empty page with a cursor is checked further.
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
  const cursorRow = () =>
    newQuery()
      .where(visible.sql, visible.params)
      .andWhere(`${alias}.id = :keysetCursorId`, { keysetCursorId: startingAfter });
  if (startingAfter) {
    // The cursor's created_at as a scalar subquery: the inner query reuses `alias`, which shadows the outer one there.
    const cursorAt = cursorRow().select(`${alias}.createdAt`);
    qb.andWhere(`(${alias}.created_at, ${alias}.id) < ((${cursorAt.getQuery()}), :keysetCursorId)`, cursorAt.getParameters());
  }
  const rows = await qb.orderBy(`${alias}.created_at`, 'DESC').addOrderBy(`${alias}.id`, 'DESC').take(limit + 1).getMany();
  if (startingAfter && rows.length === 0 && !(await cursorRow().select(`${alias}.id`).getOne())) {
    throw AppError.invalidParam('starting_after', 'is not an id from a previous page of this list');
  }
  return rows;
}
