import { plainToInstance, Transform } from 'class-transformer';
import { isIP } from 'node:net';
import {
  ArrayMinSize,
  IsArray,
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
  Validate,
  ValidateIf,
  validateSync,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { defaultConfirmations } from '../../libs/chain/src/confirmations';
import { applyChainProfile, CHAIN_NAMES } from './chain-profiles';
import { DEV_SECRETS, isKnownSecret, isLocalChain, SECRET_NAMES, SecretName } from './secrets';

const toInt = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const toBool = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : value === 'true' ? true : value === 'false' ? false : value;
const toList = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? value.split(',').map((v) => v.trim()).filter(Boolean) : value;
const urlOpts = { require_tld: false, require_protocol: true, protocols: ['http', 'https'] };
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const PRIVATE_KEY = /^0x[0-9a-fA-F]{64}$/;

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An IP address, an IP/prefix CIDR, or one of the names Express's `trust proxy` knows. */
@ValidatorConstraint({ name: 'trustedProxy' })
class IsTrustedProxy implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (typeof value !== 'string') return false;
    if (PROXY_NAMES.has(value)) return true;
    const [address, prefix, ...rest] = value.split('/');
    const family = isIP(address);
    if (!family || rest.length) return false;
    if (prefix === undefined) return true;
    return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
  }
  defaultMessage(): string {
    return 'must list IP addresses, CIDRs (10.0.0.0/8) or loopback, linklocal, uniquelocal, separated by commas';
  }
}

/** anvil account 6 (libs/chain ANVIL_ROLES.verification): the local chain's VERIFICATION_ADDRESS. */
const LOCAL_VERIFICATION_ADDRESS = '0x976EA74026E726554dB657fA54763abd0C3a0aa9';

/**
 * The settings only the api acts on that are safe on the local chain alone (docs/architecture.md
 * §12): the sandbox identity provider lets a person approve themselves, and the default
 * VERIFICATION_ADDRESS is an anvil account. Checked for the api process only, so the worker, the
 * CLI and migrations start without verification settings.
 * @returns one message line per refused setting (empty when all is well).
 */
export function apiOnlySettingErrors(env: EnvSchema): string[] {
  if (isLocalChain(env.CHAIN_ID)) return [];
  const lines: string[] = [];
  if (env.VERIFICATION_ADDRESS.toLowerCase() === LOCAL_VERIFICATION_ADDRESS.toLowerCase()) {
    lines.push(`  VERIFICATION_ADDRESS: is the local-chain default; set your own address outside the local chain (CHAIN_ID 31337)`);
  }
  if (env.IDENTITY_PROVIDER === 'sandbox') {
    lines.push(`  IDENTITY_PROVIDER="sandbox": lets a person approve themselves: local chain only (CHAIN_ID 31337); use IDENTITY_PROVIDER=stripe`);
  }
  return lines;
}

/**
 * Every setting of the service, read from environment variables and validated at start-up
 * (docs/architecture.md §10). Defaults here are the ones listed in `.env.example`; a wrong value stops the
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
  /** Chain profile (DESIGN §18, src/config/chain-profiles.ts): fills CHAIN_ID, USDC_ADDRESS and USDC's EIP-712 domain; explicit env wins. */
  @IsOptional() @IsIn(CHAIN_NAMES) CHAIN?: string;
  @Transform(toInt) @IsInt() @Min(1) CHAIN_ID = 31337;
  @Matches(EVM_ADDRESS, { message: 'must be a 0x-prefixed 20-byte address' })
  USDC_ADDRESS = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
  @Matches(EVM_ADDRESS, { message: 'must be a 0x-prefixed 20-byte address' })
  ESCROW_ADDRESS = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
  @Transform(toInt) @IsInt() @Min(0) ESCROW_DEPLOY_BLOCK = 0;
  /** USDC's EIP-712 domain name ("USD Coin" on Base, "USDC" on Base Sepolia); unset = read from the token's name(). */
  @IsOptional() @IsString() @MinLength(1) USDC_EIP712_NAME?: string;
  /** USDC's EIP-712 domain version ("2" for FiatToken v2.x); unset = read from the token's version(). */
  @IsOptional() @IsString() @MinLength(1) USDC_EIP712_VERSION?: string;
  /**
   * Blocks on top of an event's block before it counts (DESIGN §18: `head − CONFIRMATIONS ≥ block`).
   * Unset → 0 on the local chain (31337), 2 elsewhere; below 1 is refused outside the local chain.
   */
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(1000) CONFIRMATIONS!: number;
  @Transform(toInt) @IsInt() @Min(100) CHAIN_POLL_MS = 1000;
  /** Per JSON-RPC request; a slow node fails the call instead of stalling the API (docs/architecture.md §5). */
  @Transform(toInt) @IsInt() @Min(100) @Max(120000) RPC_TIMEOUT_MS = 5000;
  /**
   * Longest wait for a relayed transaction to be mined (cancelAuthorization, float sweeps and
   * withdrawals, agent escrow actions); after it the operation stays at its recovery point, pending,
   * and is resumed later (docs/architecture.md §18: every chain wait is bounded).
   */
  @Transform(toInt) @IsInt() @Min(1000) @Max(3600000) CHAIN_WAIT_MS = 120000;
  // Secrets: no class defaults. validateEnv loads only those the process uses, fills the
  // development defaults on the local chain and refuses publicly known values elsewhere.
  @IsOptional() @Matches(PRIVATE_KEY, { message: 'must be a 0x-prefixed 32-byte hex private key' })
  RELAYER_PRIVATE_KEY?: string;
  @IsOptional() @Matches(PRIVATE_KEY, { message: 'must be a 0x-prefixed 32-byte hex private key' })
  TERMS_SIGNER_PRIVATE_KEY?: string;
  @IsOptional() @Matches(PRIVATE_KEY, { message: 'must be a 0x-prefixed 32-byte hex private key' })
  ARBITER_PRIVATE_KEY?: string;
  /** Pays for `cli chain:deploy` and becomes the escrow's admin; loaded by that command only. */
  @IsOptional() @Matches(PRIVATE_KEY, { message: 'must be a 0x-prefixed 32-byte hex private key' })
  DEPLOYER_PRIVATE_KEY?: string;
  @IsOptional() @IsString() @MinLength(32, { message: 'must be at least 32 characters' })
  SIGNER_ENCRYPTION_KEY?: string;
  @IsOptional() @IsString() @MinLength(16, { message: 'must be at least 16 characters' })
  OPERATOR_TOKEN?: string;

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
  /** Per host name resolution of a webhook URL (registration and connect time). */
  @Transform(toInt) @IsInt() @Min(100) @Max(60000) WEBHOOK_DNS_TIMEOUT_MS = 2000;
  @Transform(toInt) @IsInt() @Min(100) @Max(3600000) WEBHOOK_RECOVERY_INTERVAL_MS = 15000;
  @Transform(toBool) @IsBoolean() WEBHOOK_ALLOW_HTTP = false;
  @Transform(toBool) @IsBoolean() WEBHOOK_ALLOW_PRIVATE = false;

  @Transform(toInt) @IsInt() @Min(1) RATE_LIMIT_PER_MINUTE = 600;
  @Transform(toInt) @IsInt() @Min(1) RATE_LIMIT_PUBLIC_PER_MINUTE = 120;
  /** Failed authentications per client IP per minute before 429 (checked before any credential lookup). */
  @Transform(toInt) @IsInt() @Min(1) AUTH_FAILURES_PER_MINUTE = 60;
  /** How long an api process reuses a resolved credential (0 = look up every request); revocations reach it at once through Redis. */
  @Transform(toInt) @IsInt() @Min(0) @Max(60000) CREDENTIAL_CACHE_TTL_MS = 5000;
  /** Proxies whose X-Forwarded-For is believed (Express `trust proxy`): addresses, CIDRs, loopback/linklocal/uniquelocal. */
  @Transform(toList) @IsArray() @ArrayMinSize(1) @Validate(IsTrustedProxy, { each: true }) TRUSTED_PROXIES: string[] = ['loopback'];

  // --- Verification (KYB), docs/architecture.md §12 -------------------------------------------
  /** Receives wallet-check payments; the default is anvil account 6, refused outside the local chain. */
  @Matches(EVM_ADDRESS, { message: 'must be a 0x-prefixed 20-byte address' })
  VERIFICATION_ADDRESS = LOCAL_VERIFICATION_ADDRESS;
  /** `sandbox` lets a person approve themselves, so it runs on the local chain only. */
  @IsIn(['sandbox', 'stripe'])
  IDENTITY_PROVIDER: 'sandbox' | 'stripe' = 'sandbox';
  /** Signs the sandbox provider's callbacks (Standard Webhooks secret). */
  @Matches(/^whsec_[A-Za-z0-9+/]{22,}={0,2}$/, { message: 'must be a whsec_<base64> secret of at least 16 bytes' })
  IDENTITY_SANDBOX_WEBHOOK_SECRET = 'whsec_ZGV2LW9ubHktc2FuZGJveC1pZGVudGl0eS1zZWNyZXQ=';
  @ValidateIf((e: EnvSchema) => e.IDENTITY_PROVIDER === 'stripe')
  @Matches(/^(sk|rk)_(test|live)_\w+$/, { message: 'must be a Stripe secret key (sk_… or rk_…) when IDENTITY_PROVIDER=stripe' })
  STRIPE_SECRET_KEY = '';
  @ValidateIf((e: EnvSchema) => e.IDENTITY_PROVIDER === 'stripe')
  @Matches(/^whsec_\w+$/, { message: 'must be the whsec_… signing secret of the Stripe webhook endpoint when IDENTITY_PROVIDER=stripe' })
  STRIPE_WEBHOOK_SECRET = '';
  /** Stripe API base (scheme, host, port) for a local stand-in in tests; empty = https://api.stripe.com. */
  @ValidateIf((e: EnvSchema) => e.STRIPE_API_BASE !== '') @IsUrl(urlOpts) STRIPE_API_BASE = '';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) LOG_LEVEL = 'info';

  // x402 (docs/architecture.md §14): what a bare GET /x402/challenge asks for, and the smallest payment (the relayer pays gas).
  /** USDC decimal text a bare challenge asks for. */
  @IsString() @Matches(/^(0|[1-9]\d*)(\.\d{1,6})?$/, { message: 'must be a decimal amount' }) X402_DEFAULT_AMOUNT = '0.01';
  /** Organisation handle or agent slug a bare challenge pays; empty = a bare challenge must name `to`. */
  @IsString() X402_DEFAULT_PAY_TO = '';
  /** Smallest amount (USDC decimal text) a challenge may ask for; below → 400. */
  @IsString() @Matches(/^(0|[1-9]\d*)(\.\d{1,6})?$/, { message: 'must be a decimal amount' }) X402_MIN_AMOUNT = '0.01';
  /** Longest an x402 settlement waits (ms) for its transfer to be mined at CONFIRMATIONS before answering it pending (402 `reason: "pending"`, settle `success: false`). */
  @Transform(toInt) @IsInt() @Min(0) @Max(120000) X402_RECEIPT_WAIT_MS = 15000;

  // Agents and the relayer queue (docs/architecture.md §5, §13).
  /** ETH (decimal, 18 decimals) below which the relayer makes /health/ready fail. */
  @IsString() @Matches(/^(0|[1-9]\d*)(\.\d{1,18})?$/, { message: 'must be a decimal ETH amount' }) RELAYER_MIN_BALANCE = '0.05';
  /** Highest maxFeePerGas (gwei, decimal) the relayer ever signs; node fees and bumps are capped here (DESIGN §18). */
  @IsString() @Matches(/^(0|[1-9]\d*)(\.\d{1,9})?$/, { message: 'must be a decimal gwei amount' }) RELAYER_MAX_FEE_GWEI = '100';
  /** A relayer transaction not mined this long after its last send is replaced at the same nonce with fees +12.5 % (DESIGN §18). */
  @Transform(toInt) @IsInt() @Min(1) @Max(3600) RELAYER_BUMP_AFTER_S = 30;
  /** How long a refund's EIP-3009 authorization stays usable: validBefore = chain time at creation + this (DESIGN §21: 24 h). */
  @Transform(toInt) @IsInt() @Min(60) @Max(7 * 86400) REFUND_VALIDITY_S = 86400;
  /** A txHash refund whose transfer a reorg removed fails (`reorged`) when not mined again this many seconds after the reorg was seen (DESIGN §21: 24 h). */
  @Transform(toInt) @IsInt() @Min(1) @Max(7 * 86400) REFUND_REMINE_S = 86400;
  /** Most USDC (decimal) an agent's session signer may hold; agent:fund refuses to top it up beyond. */
  @IsString() @Matches(/^(0|[1-9]\d*)(\.\d{1,6})?$/, { message: 'must be a decimal amount' }) SIGNER_FLOAT_MAX = '10000';
  /** How long the api waits for the relayer queue to broadcast before answering with the payment still pending. */
  @Transform(toInt) @IsInt() @Min(1000) @Max(120000) RELAYER_WAIT_MS = 30000;
  /**
   * Payments idle this long in pending or submitted are resumed or settled by the worker's sweep; must
   * exceed RELAYER_WAIT_MS + 2 × RPC_TIMEOUT_MS ({@link timingErrors}).
   */
  @Transform(toInt) @IsInt() @Min(1) @Max(3600) PAYMENT_SWEEP_IDLE_SECONDS = 60;
  /** Seconds between two reconciliation passes of the ledger against the chain (DESIGN §18); each pass runs on one worker. */
  @Transform(toInt) @IsInt() @Min(5) @Max(86400) RECONCILE_INTERVAL_S = 300;
  /** Most blocks one eth_getLogs of reconciliation asks for (public nodes refuse wide ranges; issue 30). */
  @Transform(toInt) @IsInt() @Min(1) @Max(100000) RECONCILE_LOG_WINDOW = 2000;
  /** Held escrows, and ended payments and x402 settlements, one reconciliation pass reads of each (a batch from a cursor; the next pass goes on; issues 30, 33). */
  @Transform(toInt) @IsInt() @Min(1) @Max(100000) RECONCILE_BATCH = 500;
  // Invoice email (docs/architecture.md §11): unset SMTP_URL = invoices are sent without email.
  @IsOptional()
  @IsString()
  @Matches(/^smtps?:\/\/[^\s]+$/, { message: 'must be an smtp:// or smtps:// URL, e.g. smtp://user:pass@mail.example.com:587' })
  SMTP_URL?: string = undefined;
  @IsString() @MinLength(3) SMTP_FROM = 'Payments <invoices@localhost>';
}

/**
 * Settings that are only valid together. The payment sweep resumes a payment idle (untouched) for
 * PAYMENT_SWEEP_IDLE_SECONDS; a request that signed it may still be waiting: two RPC calls
 * (authorizationState, head time; RPC_TIMEOUT_MS each) and the relayer queue (RELAYER_WAIT_MS) before it
 * records the broadcast. A sweep no longer than that relays the same authorization a second time and
 * wastes gas (issue 22, finding 9), so it must be strictly longer.
 * @returns one message line per refused combination (empty when all is well).
 */
export function timingErrors(env: EnvSchema): string[] {
  const longestRequestMs = env.RELAYER_WAIT_MS + 2 * env.RPC_TIMEOUT_MS;
  if (env.PAYMENT_SWEEP_IDLE_SECONDS * 1000 > longestRequestMs) return [];
  return [
    `  PAYMENT_SWEEP_IDLE_SECONDS=${env.PAYMENT_SWEEP_IDLE_SECONDS}: must be longer than RELAYER_WAIT_MS + 2 × RPC_TIMEOUT_MS (${longestRequestMs} ms), ` +
      'the longest a payment request may still be relaying it',
  ];
}

/** Variables whose value never appears in a message (keys, tokens, URLs that may carry a password). */
const HIDDEN = new Set<string>([...SECRET_NAMES, 'DATABASE_URL', 'REDIS_URL', 'RPC_URL']);

/**
 * Validates `source` (normally `process.env`) against {@link EnvSchema} and loads the secrets
 * in `secrets` (the ones this process uses; docs/architecture.md §10). Secrets not listed are
 * dropped unread, even when set. On the local chain (CHAIN_ID 31337) an unset secret takes its
 * development default; on any other chain each listed secret must be set and must not be a
 * publicly known value (anvil's published keys, the development defaults).
 * @throws Error whose message lists each invalid variable by name with the rule it broke; values
 *   of secrets and connection URLs are never included.
 */
export function validateEnv(
  source: Record<string, string | undefined>,
  secrets: readonly SecretName[] = [],
  extraChecks: (env: EnvSchema) => string[] = () => [],
): EnvSchema {
  const wanted = new Set<string>(secrets);
  const defined = Object.fromEntries(
    Object.entries(applyChainProfile(source)).filter(([k, v]) => v !== undefined && v !== '' && (!(SECRET_NAMES as readonly string[]).includes(k) || wanted.has(k))),
  );
  const env = plainToInstance(EnvSchema, defined, { exposeDefaultValues: true });
  const errors = validateSync(env, { whitelist: false });
  const lines = errors.map((e) => {
    const shown = HIDDEN.has(e.property) ? '<hidden>' : JSON.stringify(e.value);
    return `  ${e.property}=${shown}: ${Object.values(e.constraints ?? {}).join('; ')}`;
  });
  if ((env.USDC_EIP712_NAME === undefined) !== (env.USDC_EIP712_VERSION === undefined)) {
    lines.push('  USDC_EIP712_NAME and USDC_EIP712_VERSION: set both (or neither, to read them from the token, or CHAIN for a profile)');
  }
  const local = isLocalChain(env.CHAIN_ID);
  for (const name of secrets) {
    const value = env[name];
    if (value === undefined) {
      if (local) env[name] = DEV_SECRETS[name];
      else lines.push(`  ${name} must be set when CHAIN_ID is not 31337 (the local development chain); the defaults are for local use only`);
    } else if (!local && isKnownSecret(value)) {
      lines.push(`  ${name}=<hidden>: is a publicly known value (an anvil account key or a development default); set a secret of your own`);
    }
  }
  if (errors.length === 0) {
    env.CONFIRMATIONS ??= defaultConfirmations(env.CHAIN_ID);
    if (!local && env.CONFIRMATIONS < 1) {
      lines.push(`  CONFIRMATIONS=${env.CONFIRMATIONS}: must be at least 1 outside the local chain (CHAIN_ID 31337); a reorg of the head block would otherwise undo settled money`);
    }
    lines.push(...timingErrors(env), ...extraChecks(env));
  }
  if (lines.length > 0) throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  return env;
}
