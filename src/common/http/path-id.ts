import { AppError } from '../errors/app-error';
import { validate as isUuid } from 'uuid';


/**
 * A path id as every transport takes it: REST's `ParseUUIDPipe` answers 404 for an id that is not a
 * UUID, and an operation run by another transport (an MCP tool's `id` parameter) checks it here the
 * same way, before any SQL sees it (docs/architecture.md §4: unknown resources are 404).
 * @returns `id` unchanged.
 * @throws AppError 404 not_found ("No such `resource`") when `id` is not a UUID.
 */
export function requireUuid(id: string | undefined, resource: string): string {
  if (id === undefined || !isUuid(id)) throw AppError.notFound(resource);
  return id;
}
