import { parseCommandArgs, UsageError } from './args';
import { COMMANDS } from './commands';

describe('parseCommandArgs (node:util parseArgs, strict)', () => {
  const orgCreate = COMMANDS['org:create'];

  it('reads the declared flags, --json and positionals', () => {
    expect(parseCommandArgs(orgCreate, ['--name', 'Shop', '--handle=shop', '--json'])).toEqual({
      values: { name: 'Shop', handle: 'shop', json: true },
      positionals: [],
    });
    expect(parseCommandArgs(COMMANDS['demo:sign'], ['esc-1', 'release']).positionals).toEqual(['esc-1', 'release']);
  });

  it('rejects an unknown flag as a usage error naming the flag', () => {
    const parse = () => parseCommandArgs(orgCreate, ['--name', 'Shop', '--nme', 'x']);
    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(/org:create: Unknown option '--nme'/);
  });

  it('rejects a flag whose value is missing, at the end or followed by another flag', () => {
    expect(() => parseCommandArgs(orgCreate, ['--handle', 'shop', '--name'])).toThrow(/--name/);
    expect(() => parseCommandArgs(orgCreate, ['--handle', 'shop', '--name'])).toThrow(UsageError);
    expect(() => parseCommandArgs(orgCreate, ['--name', '--handle', 'shop'])).toThrow(/'--name' argument is ambiguous/);
  });

  it('rejects a value given to the boolean --json', () => {
    expect(() => parseCommandArgs(orgCreate, ['--json=yes'])).toThrow(/--json/);
  });

  it('declares every flag its usage line shows, so strict parsing accepts them', () => {
    for (const command of Object.values(COMMANDS)) {
      for (const flag of command.summary.match(/--[a-z][a-z-]*/g) ?? []) {
        expect({ command: command.name, flag, declared: flag.slice(2) in command.options }).toEqual({ command: command.name, flag, declared: true });
      }
    }
  });
});
