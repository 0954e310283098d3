import { ValueTransformer } from 'typeorm';

/** Maps `numeric(78,0)` (pg returns text) to bigint base units and back; never through a float. */
export const bigintTransformer: ValueTransformer = {
  to: (value: bigint | null | undefined) => (value === null || value === undefined ? value : value.toString()),
  from: (value: string | null) => (value === null ? null : BigInt(value)),
};
