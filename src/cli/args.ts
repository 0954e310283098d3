import { parseArgs } from 'node:util';
import type { CommandDeclaration, CommandValues } from './command';

/** A mistake in the command line itself (exit code 2). */
export class UsageError extends Error {}

/**
 * Parses one command's arguments with `node:util` parseArgs in strict mode against the command's
 * declared options plus `--json` (docs/decisions.md, "Operator CLI on node:util parseArgs").
 * @throws UsageError naming the flag on an unknown flag, a missing value or a value given to a boolean flag.
 */
export function parseCommandArgs(command: Pick<CommandDeclaration, 'name' | 'options'>, args: string[]): { values: CommandValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: { ...command.options, json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as CommandValues, positionals };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) throw new UsageError(`${command.name}: ${(err as Error).message}`);
    throw err;
  }
}

/** A required string option. @throws UsageError naming the missing flag. */
export function requireOption(values: CommandValues, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** A required comma-separated list option, trimmed, empty items dropped. @throws UsageError when absent. */
export function listOption(values: CommandValues, name: string): string[] {
  return requireOption(values, name).split(',').map((s) => s.trim()).filter(Boolean);
}

/** An address option, or `fallback` when absent. @throws UsageError when the value is not a 0x address. */
export function addressOption(values: CommandValues, name: string, fallback: () => string): string {
  const v = values[name];
  if (v === undefined) return fallback();
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(v)) throw new UsageError(`--${name} must be a 0x address`);
  return v;
}
