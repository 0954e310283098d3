import type { INestApplicationContext } from '@nestjs/common';
import type { ParseArgsConfig } from 'node:util';
import type { SecretName } from '../config/secrets';
import { TransactionHost, TxHost } from '../database/transaction';

/** What a command returns: one JSON-able object (printed as JSON with --json, else as `key: value` lines or `text`). */
export type CommandResult = Record<string, unknown>;

/** Option values as `node:util` parseArgs returns them (every command option is a string; `json` is boolean). */
export type CommandValues = Record<string, string | boolean | undefined>;

/**
 * One operator command (docs/architecture.md §9), declared in its own file under src/cli/commands/.
 * `options` is a `node:util` parseArgs option config (strict: an unknown flag or a missing value is a
 * usage error, exit code 2); `--json` is added to every command by the dispatcher. `secrets` are the
 * only secrets the process loads for it (docs/architecture.md §10). `text`, when present, is what the
 * command prints without --json.
 */
export interface CommandDeclaration {
  name: string;
  /** The usage line `--help` prints. */
  summary: string;
  options: NonNullable<ParseArgsConfig['options']>;
  secrets: readonly SecretName[];
  run(app: INestApplicationContext, values: CommandValues, positionals: string[]): Promise<CommandResult>;
  text?: (result: CommandResult) => string;
}

/** anvil account 5, the demo seller (see libs/chain ANVIL_KEYS). */
export const DEMO_SELLER_ADDRESS = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';

/** Runs `fn` in one database transaction of the CLI's application context. */
export function inTransaction<T>(app: INestApplicationContext, fn: () => Promise<T>): Promise<T> {
  return (app.get(TransactionHost) as TxHost).withTransaction(fn);
}
