/** Parsed command line: the command, `--name value` options and bare positionals. */
export interface ParsedArgs {
  command: string | undefined;
  options: Record<string, string | true>;
  positionals: string[];
}

/** Parses `cmd pos --flag --key value --key=value`; a `--key` followed by another `--x` is boolean. */
export function parseArgs(argv: string[]): ParsedArgs {
  const [command, ...rest] = argv;
  const options: Record<string, string | true> = {};
  const positionals: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) options[arg.slice(2, eq)] = arg.slice(eq + 1);
    else if (rest[i + 1] !== undefined && !rest[i + 1].startsWith('--')) options[arg.slice(2)] = rest[++i];
    else options[arg.slice(2)] = true;
  }
  return { command, options, positionals };
}

/** A required string option. @throws UsageError naming the missing flag. */
export function requireOption(args: ParsedArgs, name: string): string {
  const v = args.options[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function listOption(args: ParsedArgs, name: string): string[] {
  return requireOption(args, name).split(',').map((s) => s.trim()).filter(Boolean);
}

/** A mistake in the command line itself (exit code 2). */
export class UsageError extends Error {}
