import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { tracingRequested } from '../../src/tracing/tracing';
import { createTestApp, TestApp } from '../support/app';
import { createOrg } from '../support/factories';
import { emitEvents } from '../support/webhook-env';

const DIST = join(__dirname, '..', '..', 'dist', 'src');

/**
 * What a compiled entrypoint's first import (`dist/src/tracing/register-*.js`) and then its whole
 * module graph (`graph`, the process's root module) leave loaded in a fresh node process: whether the OpenTelemetry SDK, its instrumentations or bullmq-otel are in
 * require.cache, and which tracer provider the global API holds.
 */
function probe(register: string, graph: string | null, otel: Record<string, string>): { sdk: boolean; instrumentations: boolean; bullmqOtel: boolean; provider: string } {
  const script = `
    require(${JSON.stringify(join(DIST, 'tracing', register))});
    ${graph ? `require(${JSON.stringify(join(DIST, graph))});` : ''}
    require(${JSON.stringify(join(DIST, 'tracing', 'tracing.js'))}).bullmqTelemetry();
    const loaded = (p) => Object.keys(require.cache).some((k) => k.includes(p));
    const provider = require('@opentelemetry/api').trace.getTracerProvider().getDelegate().constructor.name;
    console.log(JSON.stringify({ sdk: loaded('/@opentelemetry/sdk-node/'), instrumentations: loaded('/@opentelemetry/instrumentation-'), bullmqOtel: loaded('/bullmq-otel/'), provider }));
    process.exit(0);`;
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', ...otel };
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { env, cwd: join(__dirname, '..', '..'), encoding: 'utf8' }).trim().split('\n').pop()!);
}

/**
 * Tracing off costs nothing (issue 21, DESIGN §20): with no `OTEL_*` variable asking for traces the
 * entrypoints load neither the SDK nor any instrumentation nor bullmq-otel, the global tracer
 * provider stays the no-op one, and outbox events are written without a traceparent.
 */
describe('tracing off', () => {
  beforeAll(() => {
    if (!existsSync(join(DIST, 'tracing', 'register-api.js'))) throw new Error('dist/src/tracing is missing: build first (npm run build)');
  });

  it('is off unless OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT or OTEL_TRACES_EXPORTER asks; none and OTEL_SDK_DISABLED win', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: 'x', OTEL_METRICS_EXPORTER: 'otlp' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(false);
  });

  it('the api and worker entrypoints load nothing of the SDK and register no tracer provider (and do when asked)', () => {
    for (const [register, graph] of [
      ['register-api.js', 'app.module.js'],
      ['register-worker.js', 'worker.module.js'],
    ]) {
      expect(probe(register, graph, {})).toEqual({ sdk: false, instrumentations: false, bullmqOtel: false, provider: 'NoopTracerProvider' });
      // The same probe sees the SDK when tracing is asked for, so the check above can fail.
      const on = probe(register, null, { OTEL_TRACES_EXPORTER: 'console', OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' });
      expect(on).toMatchObject({ sdk: true, instrumentations: true, bullmqOtel: true });
      expect(on.provider).not.toBe('NoopTracerProvider');
    }
  });

  describe('in a process without tracing', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => {
      await t?.close();
    });

    it('outbox events are written with a null traceparent', async () => {
      const org = await createOrg(t.app);
      const ids = await emitEvents(t.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'cs_untraced' } }]);
      const rows = await t.dataSource.query(`SELECT traceparent FROM outbox_events WHERE id = ANY($1::uuid[])`, [ids]);
      expect(rows).toEqual([{ traceparent: null }]);
    });
  });
});
