import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * The house's ownership map read from the code itself (issue 31 "Each table owned by one module";
 * DESIGN §17): which module writes which table, and each domain's declared operations. Used by
 * `architecture-map.spec.ts` (which fails on a second writer and on a stale docs/architecture.md)
 * and by `npm run docs:operations` (which rewrites the generated sections).
 */

/** A source file: its path from the repository root (forward slashes) and its text. */
export interface SourceFile {
  path: string;
  text: string;
}

/** One write of a table found in a file: the table (or `dynamic:<expr>` when the SQL names it by an expression) and how. */
export interface TableWrite {
  table: string;
  file: string;
  module: string;
  how: 'sql' | 'typeorm';
}

/** Every non-spec `.ts` file under `src/` of `root`. */
export function readSources(root: string): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') && !e.name.endsWith('.d.ts')) {
        out.push({ path: relative(root, p).split(sep).join('/'), text: readFileSync(p, 'utf8') });
      }
    }
  };
  walk(join(root, 'src'));
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * The module a file belongs to: `src/modules/<d>`, `src/common/<x>`, `src/kernel/<x>`, `src/chain/<x>`
 * (a file at `src/chain/` itself: `src/chain`) and, for transports and anything else, its folder.
 */
export function moduleOf(path: string): string {
  const parts = path.split('/');
  const dir = parts.slice(0, -1);
  if (['modules', 'common', 'kernel', 'chain'].includes(parts[1]) && dir.length >= 3) return dir.slice(0, 3).join('/');
  return dir.join('/');
}

const SQL_KEYWORDS = new Set(['set', 'select', 'only', 'from', 'where', 'of', 'skip']);

/** `@Entity('table') export class Name` → Name → table, over every file. */
export function entityTables(files: SourceFile[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const f of files) {
    for (const m of f.text.matchAll(/@Entity\(\s*'([a-z0-9_]+)'\s*\)\s*export\s+class\s+(\w+)/g)) map.set(m[2], m[1]);
  }
  return map;
}

const TYPEORM_WRITE = /\.(insert|update|delete|save|upsert|increment|decrement|remove|softDelete|restore)\s*\(/;

/** Every table write (raw SQL and TypeORM) in `files`, one entry per (file, table, how). */
export function scanTableWrites(files: SourceFile[]): TableWrite[] {
  const entities = entityTables(files);
  const seen = new Set<string>();
  const writes: TableWrite[] = [];
  const add = (f: SourceFile, table: string, how: TableWrite['how']) => {
    const key = `${f.path}|${table}|${how}`;
    if (seen.has(key)) return;
    seen.add(key);
    writes.push({ table, file: f.path, module: moduleOf(f.path), how });
  };
  for (const f of files) {
    const t = f.text;
    // Raw SQL: the keywords are upper case in this code base, prose is not.
    for (const m of t.matchAll(/\b(?:INSERT\s+INTO|DELETE\s+FROM)\s+(\$\{[^}]+\}|"?[a-z_][a-z0-9_]*"?)/g)) {
      add(f, m[1].startsWith('${') ? `dynamic:${m[1]}` : m[1].replace(/"/g, ''), 'sql');
    }
    for (const m of t.matchAll(/\bUPDATE\s+(\$\{[^}]+\}|"?[a-z_][a-z0-9_]*"?)(?:\s+(?:AS\s+)?[a-z_]\w*)?\s+SET\b/g)) {
      const name = m[1].replace(/"/g, '');
      if (SQL_KEYWORDS.has(name.toLowerCase())) continue;
      add(f, name.startsWith('${') ? `dynamic:${name}` : name, 'sql');
    }
    // TypeORM: getters returning a repository of an entity, used with a write method.
    const getters = new Map<string, string>();
    for (const m of t.matchAll(/get\s+(\w+)\s*\(\s*\)[^{]*\{\s*return\s+[^;]*?getRepository\(\s*(\w+)\s*\)/g)) getters.set(m[1], m[2]);
    const untilSemicolon = (from: number) => {
      const end = t.indexOf(';', from);
      return t.slice(from, end < 0 ? t.length : end);
    };
    for (const m of t.matchAll(/getRepository\(\s*(\w+)\s*\)/g)) {
      const table = entities.get(m[1]);
      if (table && TYPEORM_WRITE.test(untilSemicolon(m.index + m[0].length))) add(f, table, 'typeorm');
    }
    for (const [name, entity] of getters) {
      const table = entities.get(entity);
      if (!table) continue;
      for (const m of t.matchAll(new RegExp(`this\\.${name}\\b(?!\\s*\\()`, 'g'))) if (TYPEORM_WRITE.test(untilSemicolon(m.index))) add(f, table, 'typeorm');
    }
    // Query builders and managers naming the entity: .into(E), .update(E), .from(E) after .delete(), manager.save(E, ...).
    for (const m of t.matchAll(/\.(into|update|insert|save|upsert|delete|remove)\(\s*(\w+)\s*[,)]/g)) {
      const table = entities.get(m[2]);
      if (table) add(f, table, 'typeorm');
    }
    for (const m of t.matchAll(/\.delete\(\s*\)\s*\.from\(\s*(\w+)\s*\)/g)) {
      const table = entities.get(m[1]);
      if (table) add(f, table, 'typeorm');
    }
  }
  return writes.sort((a, b) => a.table.localeCompare(b.table) || a.file.localeCompare(b.file));
}

/** table → the modules that write it, each with its writing files. */
export function writersByTable(writes: TableWrite[]): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  for (const w of writes) {
    const mods = out.get(w.table) ?? new Map<string, string[]>();
    const files = mods.get(w.module) ?? [];
    if (!files.includes(w.file)) files.push(w.file);
    mods.set(w.module, files);
    out.set(w.table, mods);
  }
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}

/** The tables the migrations create (`CREATE TABLE name`). */
export function migrationTables(root: string): string[] {
  const dir = join(root, 'migrations');
  const names = new Set<string>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?([a-z0-9_]+)"?/g)) names.add(m[1]);
  }
  return [...names].sort();
}

/** The markdown table of table → owning module → writing files. */
export function renderTableOwners(writers: Map<string, Map<string, string[]>>, owners: Record<string, string>, notWritten: Record<string, string>): string {
  const lines = ['| table | owner (the one module that writes it) | written in |', '|---|---|---|'];
  const rows = new Map<string, string>();
  for (const [table, mods] of writers) {
    const files = [...mods.values()].flat().map((p) => `\`${p.split('/').pop()}\``);
    if (table.startsWith('dynamic:')) continue;
    rows.set(table, `| \`${table}\` | \`${owners[table] ?? '?'}\` | ${files.join(', ')} |`);
  }
  for (const [table, why] of Object.entries(notWritten)) rows.set(table, `| \`${table}\` | — | ${why} |`);
  for (const k of [...rows.keys()].sort()) lines.push(rows.get(k)!);
  return lines.join('\n');
}

/** What the docs list of one operation: its declaration's access and idempotency. */
export interface DeclaredOperation {
  name: string;
  scopes: readonly string[];
  kinds?: readonly string[];
  idempotency: string;
  input?: { name: string };
}

/** A declaration (an OperationSpec) among a module's exports: the spec itself or a record of specs. */
export function declarationsIn(exports: Record<string, unknown>): DeclaredOperation[] {
  const isSpec = (v: unknown): v is DeclaredOperation =>
    typeof v === 'object' && v !== null && typeof (v as DeclaredOperation).name === 'string' && Array.isArray((v as DeclaredOperation).scopes) && typeof (v as DeclaredOperation).idempotency === 'string';
  const out: DeclaredOperation[] = [];
  for (const v of Object.values(exports)) {
    if (isSpec(v)) out.push(v);
    else if (typeof v === 'object' && v !== null && !Array.isArray(v)) for (const w of Object.values(v as Record<string, unknown>)) if (isSpec(w)) out.push(w);
  }
  return out;
}

/** The markdown list of operations per domain (domain = the folder of its `<d>.operations.ts`). */
export function renderOperations(byDomain: Map<string, DeclaredOperation[]>): string {
  const lines = ['| domain | operation | scopes | credential kinds | idempotency | input |', '|---|---|---|---|---|---|'];
  for (const [domain, ops] of [...byDomain].sort(([a], [b]) => a.localeCompare(b))) {
    const unique = new Map(ops.map((o) => [o.name, o]));
    for (const o of [...unique.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const scopes = o.scopes.length ? o.scopes.map((s) => `\`${s}\``).join(' ') : 'any credential';
      lines.push(`| \`${domain}\` | \`${o.name}\` | ${scopes} | ${o.kinds?.join(', ') ?? 'any'} | ${o.idempotency} | ${o.input ? `\`${o.input.name}\`` : '—'} |`);
    }
  }
  return lines.join('\n');
}

/**
 * `doc` with the text between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` replaced by `body`.
 * @throws Error when the markers are missing.
 */
export function replaceGenerated(doc: string, name: string, body: string): string {
  const open = `<!-- generated:${name} -->`;
  const close = `<!-- /generated:${name} -->`;
  const i = doc.indexOf(open);
  const j = doc.indexOf(close);
  if (i < 0 || j < i) throw new Error(`docs/architecture.md: markers ${open} … ${close} are missing`);
  return `${doc.slice(0, i + open.length)}\n${body}\n${doc.slice(j)}`;
}

/**
 * SQL reads of a table by a module that does not own it (`FROM`/`JOIN <table>` in a file of another
 * module): module → the foreign tables it reads. Tables are those of `owners`.
 */
export function foreignReads(files: SourceFile[], owners: Record<string, string>): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const f of files) {
    const mod = moduleOf(f.path);
    for (const m of f.text.matchAll(/\b(?:FROM|JOIN)\s+"?([a-z_][a-z0-9_]*)"?/g)) {
      const owner = owners[m[1]];
      if (!owner || owner === mod) continue;
      out.set(mod, (out.get(mod) ?? new Set()).add(m[1]));
    }
  }
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, [...v].sort()]));
}

/** The markdown table of {@link foreignReads}, with why each remains (`allowed[module].why`; `?` when not given). */
export function renderForeignReads(reads: Map<string, string[]>, allowed: Record<string, { why: string }> = {}): string {
  const lines = ['| module | reads by SQL (tables of other modules) | why it remains |', '|---|---|---|'];
  for (const [mod, tables] of reads) lines.push(`| \`${mod}\` | ${tables.map((t) => `\`${t}\``).join(', ')} | ${allowed[mod]?.why ?? '?'} |`);
  return lines.join('\n');
}
