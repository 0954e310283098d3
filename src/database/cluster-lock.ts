import { Logger, OnModuleDestroy } from '@nestjs/common';
import { Client } from 'pg';

/** First key of our two-key advisory locks (the idempotency locks use the one-bigint form, a separate key space). */
const NAMESPACE = 0x70637031; // "pcp1"

/** What {@link ClusterLock.run} did: ran `fn` under the lock, or skipped because another holder has it. */
export type LockedRun<T> = { ran: true; value: T } | { ran: false };

/**
 * Cluster-wide mutual exclusion for background passes (docs/decisions.md "Chain jobs run one at a
 * time"): a session-level Postgres advisory lock (`pg_try_advisory_lock(ns, hashtext(name))`)
 * taken on one dedicated connection per process, outside the pool. The pass itself runs its short
 * transactions on pooled connections and makes its RPC calls holding none; only this idle
 * connection holds the lock. If the connection dies the server releases the lock, so a crashed
 * worker never blocks the others. Never waits: a pass another process holds is skipped. The
 * process's one instance is injected (DatabaseModule provides it).
 */
export class ClusterLock implements OnModuleDestroy {
  private readonly logger = new Logger(ClusterLock.name);
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  /** Names held by this process (a session lock is re-entrant within its own session). */
  private readonly held = new Set<string>();

  constructor(private readonly databaseUrl: string) {}

  /**
   * Runs `fn` while holding the lock `name` cluster-wide; returns `{ ran: false }` at once when
   * another process (or this one) holds it.
   * @throws whatever `fn` throws (the lock is released first); Error when Postgres is unreachable.
   */
  async run<T>(name: string, fn: () => Promise<T>): Promise<LockedRun<T>> {
    if (this.held.has(name)) return { ran: false };
    this.held.add(name);
    try {
      const client = await this.connection();
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::int, hashtext($2)) AS ok', [NAMESPACE, name]);
      if (!rows[0]?.ok) return { ran: false };
      try {
        return { ran: true, value: await fn() };
      } finally {
        await client.query('SELECT pg_advisory_unlock($1::int, hashtext($2))', [NAMESPACE, name]).catch((err: Error) => {
          // The session is gone, and with it the lock.
          this.logger.warn({ lock: name, err: err.message }, 'advisory unlock failed');
        });
      }
    } finally {
      this.held.delete(name);
    }
  }

  /** Closes the lock's connection when the process shuts down (an injected instance, DatabaseModule). */
  async onModuleDestroy(): Promise<void> {
    await this.close();
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private connection(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = new Client({ connectionString: this.databaseUrl, keepAlive: true, application_name: 'pcp-cluster-lock' });
      client.on('error', (err) => {
        this.logger.error({ err: err.message }, 'cluster lock connection lost; its locks are released');
        if (this.client === client) this.client = null;
      });
      client.on('end', () => {
        if (this.client === client) this.client = null;
      });
      try {
        await client.connect();
        this.client = client;
        return client;
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }
}
