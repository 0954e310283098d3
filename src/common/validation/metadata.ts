import { AppError } from '../errors/app-error';

export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_BYTES = 8 * 1024;

/**
 * Bounds of a resource's `metadata` object: at most 50 keys and 8 kB as JSON (docs/decisions.md
 * "Checkout defaults", applied to every resource with metadata).
 * @throws AppError invalid_request naming `param` when either bound is exceeded.
 */
export function assertMetadataBounds(param: string, metadata: Record<string, unknown> | null | undefined): void {
  if (!metadata) return;
  if (Object.keys(metadata).length > METADATA_MAX_KEYS) throw AppError.invalidParam(param, `must have at most ${METADATA_MAX_KEYS} keys`);
  if (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_MAX_BYTES) throw AppError.invalidParam(param, 'must be at most 8 kB as JSON');
}
