import { parseAmount } from '@lib/money';
import { apiOnlySettingErrors, EnvSchema, validateEnv } from './env.schema';
import { ProcessSecrets, SecretName } from './secrets';

/** A process that loads no secrets (unit tests, tools that only need the plain settings). */
const NO_SECRETS: ProcessSecrets = { name: 'unnamed', secrets: [] };

/**
 * Typed, validated configuration; the only reader of `process.env` (docs/architecture.md, Conventions 10). Injected by
 * class token. Amount limits are bigint base units. `process` names the process and the secrets
 * it loads (docs/architecture.md §10); read them through {@link secret}.
 * @throws Error from {@link validateEnv} when the environment is invalid.
 */
export class AppConfig {
  readonly env: EnvSchema;
  readonly maxAmountUnits: bigint;

  constructor(
    source: Record<string, string | undefined> = globalThis.process.env,
    readonly process: ProcessSecrets = NO_SECRETS,
  ) {
    this.env = validateEnv(source, this.process.secrets, this.process.name === 'api' ? apiOnlySettingErrors : undefined);
    this.maxAmountUnits = parseAmount(this.env.MAX_AMOUNT);
  }

  /**
   * USDC's EIP-712 domain name and version when configured (a CHAIN profile or USDC_EIP712_NAME/VERSION,
   * DESIGN §18); undefined = the gateway reads them from the token.
   */
  get usdcDomain(): { name: string; version: string } | undefined {
    const { USDC_EIP712_NAME: name, USDC_EIP712_VERSION: version } = this.env;
    return name !== undefined && version !== undefined ? { name, version } : undefined;
  }

  get isTest(): boolean {
    return this.env.NODE_ENV === 'test';
  }

  /**
   * A secret this process loaded (validated at start-up).
   * @throws Error naming the secret and the process when this process does not load it.
   */
  secret(name: SecretName): string {
    const value = this.env[name];
    if (value === undefined) throw new Error(`${name} is not loaded by the ${this.process.name} process`);
    return value;
  }
}
