import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
} from 'class-validator';

const toInt = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const toBool = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : value === 'true' ? true : value === 'false' ? false : value;
const urlOpts = { require_tld: false, require_protocol: true, protocols: ['http', 'https'] };
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const PRIVATE_KEY = /^0x[0-9a-fA-F]{64}$/;

/**
 * Every setting of the service, read from environment variables and validated at start-up
 * (DESIGN §10). Defaults here are the ones listed in `.env.example`; a wrong value stops the
 * process with a message naming the variable.
 */
export class EnvSchema {
  @IsOptional() @IsIn(['development', 'production', 'test']) NODE_ENV = 'development';

  @Transform(toInt) @IsInt() @Min(1) @Max(65535) PORT = 3000;
  @Transform(toInt) @IsInt() @Min(0) @Max(65535) CHECKOUT_PORT = 0;
  @Transform(toInt) @IsInt() @Min(0) @Max(65535) MCP_PORT = 0;
  @Transform(toInt) @IsInt() @Min(1) @Max(65535) WORKER_PORT = 3100;

  @IsUrl(urlOpts) API_BASE_URL = 'http://localhost:3000';
  @IsUrl(urlOpts) CHECKOUT_BASE_URL = 'http://localhost:3000';
  @IsUrl(urlOpts) MCP_BASE_URL = 'http://localhost:3000';

  @IsString() @Matches(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// URL' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/payments';
  @IsString() @Matches(/^rediss?:\/\//, { message: 'must be a redis:// URL' }) REDIS_URL = 'redis://127.0.0.1:6379';
  @IsString() @MinLength(1) REDIS_PREFIX = 'pcp';

  @IsUrl(urlOpts) RPC_URL = 'http://127.0.0.1:8545';
  @Transform(toInt) @IsInt() @Min(1) CHAIN_ID = 31337;
  @Matches(EVM_ADDRESS, { message: 'must be a 0x-prefixed 20-byte address' })
  USDC_ADDRESS = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
  @Matches(EVM_ADDRESS, { message: 'must be a 0x-prefixed 20-byte address' })
  ESCROW_ADDRESS = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
  @Transform(toInt) @IsInt() @Min(0) ESCROW_DEPLOY_BLOCK = 0;
  @Transform(toInt) @IsInt() @Min(0) @Max(1000) CONFIRMATIONS = 0;
  @Transform(toInt) @IsInt() @Min(100) CHAIN_POLL_MS = 1000;
  @Matches(PRIVATE_KEY, { message: 'must be a 0x-prefixed 32-byte hex private key' })
  RELAYER_PRIVATE_KEY = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a';
  @Matches(PRIVATE_KEY, { message: 'must be a 0x-prefixed 32-byte hex private key' })
  TERMS_SIGNER_PRIVATE_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
  @Matches(PRIVATE_KEY, { message: 'must be a 0x-prefixed 32-byte hex private key' })
  ARBITER_PRIVATE_KEY = '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6';
  @IsString() @MinLength(32, { message: 'must be at least 32 characters' })
  SIGNER_ENCRYPTION_KEY = 'dev-only-signer-encryption-key-change-me';
  @IsString() @MinLength(16, { message: 'must be at least 16 characters' })
  OPERATOR_TOKEN = 'dev-operator-token-change-me';

  @Transform(toBool) @IsBoolean() AGENTS_ENABLED = true;
  @IsString() @Matches(/^(0|[1-9]\d*)(\.\d{1,6})?$/, { message: 'must be a decimal amount' }) MAX_AMOUNT = '1000000';
  @Transform(toInt) @IsInt() @Min(1) @Max(720) IDEMPOTENCY_TTL_HOURS = 24;
  @Transform(toInt) @IsInt() @Min(60) @Max(86400) OAUTH_TOKEN_TTL_SECONDS = 3600;
  @Transform(toInt) @IsInt() @Min(1800) @Max(86400) CHECKOUT_DEFAULT_TTL_SECONDS = 86400;

  @Transform(({ value }) => (value === undefined || value === '' ? undefined : Number(value)))
  @Min(0.00001)
  @Max(1000)
  WEBHOOK_RETRY_SCALE = 1;
  @Transform(toInt) @IsInt() @Min(100) @Max(60000) WEBHOOK_TIMEOUT_MS = 15000;
  @Transform(toInt) @IsInt() @Min(100) @Max(3600000) WEBHOOK_RECOVERY_INTERVAL_MS = 15000;
  @Transform(toBool) @IsBoolean() WEBHOOK_ALLOW_HTTP = false;
  @Transform(toBool) @IsBoolean() WEBHOOK_ALLOW_PRIVATE = false;

  @Transform(toInt) @IsInt() @Min(1) RATE_LIMIT_PER_MINUTE = 600;
  @Transform(toInt) @IsInt() @Min(1) RATE_LIMIT_PUBLIC_PER_MINUTE = 120;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) LOG_LEVEL = 'info';

  // Invoice email (docs/architecture.md §11): unset SMTP_URL = invoices are sent without email.
  @IsOptional()
  @IsString()
  @Matches(/^smtps?:\/\/[^\s]+$/, { message: 'must be an smtp:// or smtps:// URL, e.g. smtp://user:pass@mail.example.com:587' })
  SMTP_URL?: string = undefined;
  @IsString() @MinLength(3) SMTP_FROM = 'Payments <invoices@localhost>';
}

/**
 * Validates `source` (normally `process.env`) against {@link EnvSchema}.
 * @throws Error whose message lists each invalid variable by name with the rule it broke.
 */
export function validateEnv(source: Record<string, string | undefined>): EnvSchema {
  const defined = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const env = plainToInstance(EnvSchema, defined, { exposeDefaultValues: true });
  const errors = validateSync(env, { whitelist: false });
  if (errors.length > 0) {
    const lines = errors.map((e) => `  ${e.property}=${JSON.stringify(e.value)}: ${Object.values(e.constraints ?? {}).join('; ')}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return env;
}
