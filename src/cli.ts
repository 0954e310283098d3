import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CliModule } from './cli.module';
import { parseArgs } from './cli/args';
import { COMMAND_SECRETS } from './cli/command-secrets';
import { COMMANDS } from './cli/commands';
import { UsageError } from './cli/args';
import { AppError } from './common/errors/app-error';

/**
 * Operator CLI entry (docs/architecture.md §9): `npm run cli -- <command> [--json]`. With --json it prints
 * exactly one JSON object on stdout (the result, or `{error, code?, details?}`), exit code 0 on
 * success, 2 on a usage or validation error, 1 otherwise.
 */
async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  const json = args.options.json === true;
  const command = args.command ? COMMANDS[args.command] : undefined;
  if (!command) {
    const usage = Object.values(COMMANDS).map((c) => `  ${c.usage}`).join('\n');
    const error = `unknown command ${args.command ?? ''}`.trim();
    if (json) console.log(JSON.stringify({ error, usage: Object.values(COMMANDS).map((c) => c.usage) }));
    else console.error(`usage: npm run cli -- <command> [--json]\n${usage}`);
    return 2;
  }
  let app: INestApplicationContext;
  try {
    // Only the secrets this command uses are loaded and checked (docs/architecture.md §10).
    app = await NestFactory.createApplicationContext(CliModule.forCommand(COMMAND_SECRETS[args.command!] ?? []), {
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
    const result = await command.run(app, args);
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
