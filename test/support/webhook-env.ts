import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { migrate } from '../../src/database/migrate';
import { deleteKeys, dropDatabase } from './services';

import { EventsService } from '../../src/common/outbox/events.service';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { createWorkerApp } from '../../src/worker';
import { WorkerModule } from '../../src/worker.module';

/** The environment of {@link isolatedWebhookEnv}: overrides to pass to the app and the worker. */
export interface IsolatedEnv {
  env: Record<string, string>;
  /** Deletes this file's Redis keys (only `${REDIS_PREFIX}*`; never FLUSHALL: the Redis is shared). */
  flushRedis(): Promise<number>;
  drop(): Promise<void>;
}

/**
 * A database and Redis prefix of its own for one webhook test file, so its worker's relay (which
 * claims every organisation's outbox rows) and queue never touch another file's data. The
 * database (`<test db>_<tag>_<pid>`) is dropped if left over, then created and migrated like the
 * shared test database; the prefix starts with the run's prefix, so global teardown removes its
 * keys too.
 */
export async function isolatedWebhookEnv(tag: string): Promise<IsolatedEnv> {
  const base = new URL(process.env.DATABASE_URL!);
  const name = `${base.pathname.slice(1)}_${tag}_${process.pid}`.replace(/[^A-Za-z0-9_]/g, '_');
  const url = new URL(base.toString());
  url.pathname = `/${name}`;
  await dropDatabase(url.toString());
  await migrate(url.toString());
  const prefix = `${process.env.REDIS_PREFIX}${tag}`;
  const env = { DATABASE_URL: url.toString(), REDIS_PREFIX: prefix };
  const flushRedis = () => deleteKeys(process.env.REDIS_URL!, prefix);
  return {
    env,
    flushRedis,
    drop: async () => {
      await flushRedis();
      await dropDatabase(url.toString());
    },
  };
}

/** An in-process worker started by {@link startTestWorker}; `port` serves health, metrics and Bull Board. */
export interface TestWorker {
  app: NestExpressApplication;
  port: number;
  close(): Promise<void>;
}

/**
 * Boots the real WorkerModule in this process (relay loop, delivery processor, recovery pass,
 * health/metrics/Bull Board on an ephemeral port) with `env` overrides applied while it reads
 * its configuration. `overrides` swaps providers (e.g. the HostResolver port).
 */
export async function startTestWorker(env: Record<string, string>, overrides: Array<{ provide: unknown; useValue: unknown }> = []): Promise<TestWorker> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    let app: NestExpressApplication;
    if (overrides.length === 0) {
      app = await createWorkerApp();
    } else {
      let builder = Test.createTestingModule({ imports: [WorkerModule] });
      for (const o of overrides) builder = builder.overrideProvider(o.provide).useValue(o.useValue);
      const moduleRef = await builder.compile();
      app = moduleRef.createNestApplication<NestExpressApplication>({ bufferLogs: true });
      app.useLogger(app.get(Logger));
    }
    await app.listen(0, '127.0.0.1');
    const port = (app.getHttpServer().address() as { port: number }).port;
    return { app, port, close: () => app.close() };
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Emits events through the real EventsService inside one transaction (the outbox write of docs/architecture.md §8). */
export async function emitEvents(
  app: INestApplicationContext,
  organizationId: string,
  items: Array<{ type: WebhookEvent; object: object; extraTargetUrl?: string | null }>,
): Promise<string[]> {
  const events = app.get(EventsService);
  return (app.get(TransactionHost) as TxHost).withTransaction(async () => {
    const ids: string[] = [];
    for (const item of items) ids.push(...(await events.emit(organizationId, item.type, item.object, item.extraTargetUrl ?? null)).map((e) => e.id));
    return ids;
  });
}

/** Delivery rows of an organisation, straight from Postgres. */
export async function deliveryRows(ds: DataSource, organizationId: string) {
  return ds.query(
    `SELECT id, event_id, event_type, url, status, attempts, response_status, last_error, next_attempt_at, last_attempt_at, delivered_at
       FROM webhook_deliveries WHERE organization_id = $1 ORDER BY created_at, id`,
    [organizationId],
  ) as Promise<
    Array<{ id: string; event_id: string; event_type: string; url: string; status: string; attempts: number; response_status: number | null; last_error: string | null; next_attempt_at: Date | null; last_attempt_at: Date | null; delivered_at: Date | null }>
  >;
}
