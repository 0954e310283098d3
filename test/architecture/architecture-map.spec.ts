import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import {
  declarationsIn,
  DeclaredOperation,
  foreignReads,
  migrationTables,
  readSources,
  renderForeignReads,
  renderOperations,
  renderTableOwners,
  replaceGenerated,
  scanTableWrites,
  SourceFile,
  writersByTable,
} from './architecture-map';

const ROOT = join(__dirname, '..', '..');
const DOC = join(ROOT, 'docs', 'architecture.md');

/**
 * Each table → the one module that writes it (issue 31 "Each table owned by one module"). A change
 * of owner is a change of this map, reviewed; a second writer fails the test below.
 */
const TABLE_OWNERS: Record<string, string> = {
  a2a_tasks: 'src/transports/a2a',
  agent_owner_nonces: 'src/modules/agents',
  agents: 'src/modules/agents',
  api_keys: 'src/modules/orgs',
  balance_transactions: 'src/modules/balance',
  chain_blocks: 'src/modules/escrow',
  chain_cursors: 'src/chain',
  chain_events_set_aside: 'src/modules/escrow',
  checkout_relays: 'src/modules/checkout-relay',
  checkout_sessions: 'src/modules/checkout',
  console_nonces: 'src/transports/pages/console',
  console_sessions: 'src/transports/pages/console',
  escrow_chain_events: 'src/modules/escrow',
  escrows: 'src/modules/escrow',
  idempotency_records: 'src/kernel/idempotency',
  invoice_emails: 'src/modules/invoices',
  invoice_number_counters: 'src/modules/invoices',
  invoices: 'src/modules/invoices',
  mandates: 'src/modules/mandates',
  oauth_clients: 'src/modules/orgs',
  oauth_tokens: 'src/modules/orgs',
  offerings: 'src/modules/offerings',
  organization_owners: 'src/modules/orgs',
  organization_verifications: 'src/modules/verification',
  organizations: 'src/modules/orgs',
  outbox_events: 'src/common/outbox',
  payments: 'src/modules/payments',
  reconcile_cancellations: 'src/chain/reconciliation',
  refunds: 'src/modules/refunds',
  relayer_nonces: 'src/chain/relayer',
  relayer_transactions: 'src/chain/relayer',
  verification_wallet_payments: 'src/modules/verification',
  webhook_deliveries: 'src/modules/webhooks',
  webhook_endpoints: 'src/modules/webhooks',
  x402_settlements: 'src/modules/payments',
};

/** Tables no application code writes, with who does. */
const NOT_WRITTEN_BY_CODE: Record<string, string> = {
  payee_handles: 'the `payee_handle_claim` trigger on `organizations` and `agents` inserts (migration Agents1795300013000)',
};

/**
 * Second writers not yet moved, each with what is left to do. The test fails on any other second
 * writer and on an entry here that is gone (so the list only shrinks).
 */
const PENDING_SECOND_WRITERS: Record<string, string[]> = {};

/**
 * The reads by SQL of another module's table that remain, each with why (issue 31 "Each table owned
 * by one module": other reads go through the owner's service). The test fails on any other foreign
 * read and on an entry here that is gone or shrank, so this list only shrinks; docs/architecture.md
 * shows it.
 */
const ALLOWED_FOREIGN_READS: Record<string, { tables: string[]; why: string }> = {
  'src/chain/reconciliation': {
    tables: ['escrows', 'payments', 'relayer_nonces', 'relayer_transactions', 'x402_settlements'],
    why: "the one exception the issue names: reconciliation's read-only queries compare the database with the chain; the chain room names no domain (§14)",
  },
  'src/modules/checkout': {
    tables: ['organization_verifications'],
    why: "the create hot path's KYB gate is a `NOT EXISTS` inside the checkout INSERT itself (one statement, no round trip of its own; docs/decisions.md)",
  },
};

/** A fixture source file at `path` whose one statement is `sql`, run through an entity manager. */
function sqlFixture(path: string, sql: string): SourceFile {
  return { path, text: `export const q = (em: { query(s: string): unknown }) => em.query(\`${sql}\`);` };
}

/** The modules writing `table` in `files`, and the tables whose SQL names them by an expression. */
function ownership(files: SourceFile[]) {
  const writers = writersByTable(scanTableWrites(files));
  const dynamic = [...writers.keys()].filter((t) => t.startsWith('dynamic:'));
  const second: Record<string, string[]> = {};
  for (const [table, mods] of writers) {
    if (table.startsWith('dynamic:')) continue;
    const others = [...mods.keys()].filter((m) => m !== TABLE_OWNERS[table]);
    if (others.length) second[table] = others;
  }
  return { writers, dynamic, second };
}

describe('reads of another module\'s table go through its service (issue 31)', () => {
  const files = readSources(ROOT);
  const allowed = new Map(Object.entries(ALLOWED_FOREIGN_READS).map(([mod, a]) => [mod, a.tables]));

  it('the SQL reads of other modules\' tables are exactly the allowed ones (a new one fails; a removed one must leave the list)', () => {
    expect(Object.fromEntries(foreignReads(files, TABLE_OWNERS))).toEqual(Object.fromEntries(allowed));
  });

  it('fails on a new foreign read (a fixture reads payments from the webhooks module and organizations from refunds)', () => {
    const reads = foreignReads(
      [
        ...files,
        sqlFixture('src/modules/webhooks/rogue.repository.ts', 'SELECT p.id FROM payments p WHERE p.id = $1'),
        sqlFixture('src/modules/refunds/rogue.repository.ts', 'SELECT r.id FROM refunds r JOIN organizations o ON o.id = r.organization_id'),
      ],
      TABLE_OWNERS,
    );
    expect(reads.get('src/modules/webhooks')).toEqual(['payments']);
    expect(reads.get('src/modules/refunds')).toEqual(['organizations']);
    expect(Object.fromEntries(reads)).not.toEqual(Object.fromEntries(allowed));
  });
});

describe('each table is written by one module (issue 31)', () => {
  const files = readSources(ROOT);

  it('every table the migrations create has an owner (or is written by the database alone)', () => {
    const unmapped = migrationTables(ROOT).filter((t) => !(t in TABLE_OWNERS) && !(t in NOT_WRITTEN_BY_CODE));
    expect(unmapped).toEqual([]);
  });

  it('each table is written only by its owning module, naming its table in its SQL', () => {
    const { writers, dynamic, second } = ownership(files);
    expect(dynamic).toEqual([]);
    expect(second).toEqual(PENDING_SECOND_WRITERS);
    for (const [table, owner] of Object.entries(TABLE_OWNERS)) expect([table, writers.get(table)?.has(owner) ?? false]).toEqual([table, true]);
  });

  it('fails on a second writer (a fixture adds one beside the real code)', () => {
    const rogue = sqlFixture('src/modules/checkout/rogue.repository.ts', "UPDATE payments SET status = 'failed' WHERE id = $1");
    const typeorm: SourceFile = {
      path: 'src/modules/invoices/rogue.repository.ts',
      text: 'export const y = (em: any, r: unknown) => em.getRepository(Mandate).update({ id: 1 }, r);',
    };
    const entity = files.find((f) => f.path === 'src/modules/mandates/mandate.entity.ts')!;
    expect(entity).toBeDefined();
    const { second } = ownership([...files, rogue, typeorm]);
    expect(second.payments).toContain('src/modules/checkout');
    expect(second.mandates).toContain('src/modules/invoices');
  });
});

/** Every `*.operations.ts` under src/, by domain (its folder name). */
function operationFiles(): Array<{ domain: string; path: string }> {
  const out: Array<{ domain: string; path: string }> = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.operations.ts')) out.push({ domain: e.name.replace(/\.operations\.ts$/, ''), path: p });
    }
  };
  walk(join(ROOT, 'src'));
  return out;
}

/**
 * The generated sections of docs/architecture.md: table → owner and the operations per domain.
 * `WRITE_ARCHITECTURE_DOCS=1` (npm run docs:operations) rewrites them; otherwise a stale copy fails.
 */
describe('docs/architecture.md generated sections', () => {
  it('are current (npm run docs:operations rewrites them)', async () => {
    const byDomain = new Map<string, DeclaredOperation[]>();
    for (const f of operationFiles()) {
      const mod = (await import(f.path)) as Record<string, unknown>;
      const specs = declarationsIn(mod);
      expect([relative(ROOT, f.path).split(sep).join('/'), specs.length > 0]).toEqual([relative(ROOT, f.path).split(sep).join('/'), true]);
      byDomain.set(f.domain, [...(byDomain.get(f.domain) ?? []), ...specs]);
    }
    const sources = readSources(ROOT);
    const { writers } = ownership(sources);
    const current = readFileSync(DOC, 'utf8');
    let next = replaceGenerated(current, 'table-owners', renderTableOwners(writers, TABLE_OWNERS, NOT_WRITTEN_BY_CODE));
    next = replaceGenerated(next, 'operations', renderOperations(byDomain));
    next = replaceGenerated(next, 'foreign-reads', renderForeignReads(foreignReads(sources, TABLE_OWNERS), ALLOWED_FOREIGN_READS));
    if (process.env.WRITE_ARCHITECTURE_DOCS === '1') writeFileSync(DOC, next);
    else expect(current).toEqual(next);
  });
});
