import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CliModule } from './cli.module';
import { parseCommandArgs, UsageError } from './cli/args';
import { COMMANDS } from './cli/commands';
import { AppError } from './common/errors/app-error';

/**
 * Operator CLI entry (docs/architecture.md §9): `npm run cli -- <command> [--json]`, `--help` lists the
 * commands. Each command's flags are parsed by `node:util` parseArgs in strict mode (src/cli/args.ts). With --json it prints
 * exactly one JSON object on stdout (the result, or `{error, code?, details?}`), exit code 0 on
 * success, 2 on a usage or validation error, 1 otherwise.
 */
async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const json = rest.includes('--json');
  const usageLines = Object.values(COMMANDS).map((c) => c.summary);
  if (name === '--help' || name === '-h' || name === 'help') {
    if (json) console.log(JSON.stringify({ usage: usageLines }));
    else console.log(`usage: npm run cli -- <command> [--json]\n${usageLines.map((u) => `  ${u}`).join('\n')}`);
    return 0;
  }
  const command = name ? COMMANDS[name] : undefined;
  if (!command) {
    const error = `unknown command ${name ?? ''}`.trim();
    if (json) console.log(JSON.stringify({ error, usage: usageLines }));
    else console.error(`usage: npm run cli -- <command> [--json]\n${usageLines.map((u) => `  ${u}`).join('\n')}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    if (json) console.log(JSON.stringify({ usage: [command.summary] }));
    else console.log(`usage: npm run cli -- ${command.summary}`);
    return 0;
  }
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseCommandArgs(command, rest));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (json) console.log(JSON.stringify({ error: err.message, usage: [command.summary] }));
    else console.error(`error: ${err.message}\nusage: npm run cli -- ${command.summary}`);
    return 2;
  }
  let app: INestApplicationContext;
  try {
    // Only the secrets this command uses are loaded and checked (docs/architecture.md §10).
    app = await NestFactory.createApplicationContext(CliModule.forCommand(command.secrets), {
      logger: json ? false : ['error', 'warn'],
      abortOnError: false,
    });
  } catch (err) {
    const error = (err as Error).message;
    if (json) console.log(JSON.stringify({ error }));
    else console.error(`error: ${error}`);
    return 1;
  }
  try {
    const result = await command.run(app, values, positionals);
    if (json) console.log(JSON.stringify(result));
    else if (command.text) console.log(command.text(result));
    else for (const [k, v] of Object.entries(result)) console.log(`${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
    return 0;
  } catch (err) {
    const e = err as Error;
    const body = err instanceof AppError ? { error: e.message, code: err.code, details: err.details } : { error: e.message };
    if (json) console.log(JSON.stringify(body));
    else console.error(`error: ${e.message}`);
    return err instanceof AppError || err instanceof UsageError ? 2 : 1;
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
