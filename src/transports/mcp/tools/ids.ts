import { z } from 'zod';

export { requireUuid } from '../../../common/http/path-id';

/** A path id as REST takes it: any string; one that is not a UUID is simply not found (as REST's 404). */
export const idParam = (what: string) => z.string().describe(`The ${what} id`);

/** `idempotencyKey`, optional or required, as its REST twin's Idempotency-Key header. */
export const idempotencyKey = (required: boolean) => {
  const key = z.string().min(1).max(128).describe('Same key and arguments return the first result again for 24 h (the REST Idempotency-Key)');
  return required ? key : key.optional();
};

/** List parameters as REST's query (docs/architecture.md §6). */
export const listShape = {
  limit: z.number().int().optional().describe('1–100, default 10'),
  starting_after: z.string().optional().describe('nextCursor of the previous page'),
};
