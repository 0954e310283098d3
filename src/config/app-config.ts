import { parseAmount } from '@lib/money';
import { EnvSchema, validateEnv } from './env.schema';

/**
 * Typed, validated configuration; the only reader of `process.env` (STYLE §10). Injected by
 * class token. Amount limits are bigint base units.
 */
export class AppConfig {
  readonly env: EnvSchema;
  readonly maxAmountUnits: bigint;

  constructor(source: Record<string, string | undefined> = process.env) {
    this.env = validateEnv(source);
    this.maxAmountUnits = parseAmount(this.env.MAX_AMOUNT);
  }

  get isTest(): boolean {
    return this.env.NODE_ENV === 'test';
  }
}
