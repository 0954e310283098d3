import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');
const CLIENT = join(ROOT, 'src', 'transports', 'pages', 'console', 'client');

const clientFiles = (dir: string = CLIENT): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? clientFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));

/** The file's code without its comments (so prose may say "any"). */
function code(file: string): string {
  const source = readFileSync(file, 'utf8');
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, source);
  let out = '';
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind !== ts.SyntaxKind.SingleLineCommentTrivia && kind !== ts.SyntaxKind.MultiLineCommentTrivia) out += scanner.getTokenText();
  }
  return out;
}

/**
 * Issue 31, "Files that do one job" (the console client) and "Types are checked": every console page
 * reads the API through the SDK's generated types, so a renamed API field fails `npm run lint`.
 * That holds while (1) the typecheck `npm run lint` runs covers every client file, and (2) no page
 * reads an answer as a loose row (`any`, `Record<string, unknown>`).
 */
describe('the console client is type-checked against the SDK', () => {
  it("npm run lint's typecheck compiles every console client file", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.lint).toContain('npm run typecheck');
    expect(pkg.scripts.typecheck).toContain('tsc --noEmit -p tsconfig.json');
    const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (p) => ts.sys.readFile(p));
    const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
    const compiled = new Set(parsed.fileNames.map((f) => relative(ROOT, f)));
    const files = clientFiles().map((f) => relative(ROOT, f));
    expect(files.length).toBeGreaterThan(5);
    expect(files.filter((f) => !compiled.has(f))).toEqual([]);
  });

  it('no console page reads an API answer as an untyped row (any, Record<string, unknown>)', () => {
    const loose = clientFiles().flatMap((f) => {
      const text = code(f);
      return [/\bany\b/, /Record<string,\s*unknown>/].filter((re) => re.test(text)).map((re) => `${relative(CLIENT, f)}: ${re.source}`);
    });
    expect(loose).toEqual([]);
  });
});
