import { Controller, Get, HttpException, Logger as NestLogger, Module, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger, LoggerModule, PinoLogger } from 'nestjs-pino';
import { Writable } from 'node:stream';
import request from 'supertest';
import { requestIdMiddleware } from './errors/request-id';
import { requestLogging } from './request-log';
import { serializeRequest, serializeResponse } from '../core.module';

const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

@Controller('probe')
class ProbeController {
  private readonly log = new NestLogger('Probe');
  @Get()
  probe() {
    this.log.log('inside the request');
    return { ok: true };
  }

  @Get('fails')
  fails() {
    throw new HttpException('down', 503);
  }

  /** How many `close` listeners the response has when the handler runs (the request log adds one at `info`). */
  @Get('listeners')
  listeners(@Res({ passthrough: true }) res: Response) {
    return { close: res.listenerCount('close'), finish: res.listenerCount('finish') };
  }
}

@Module({
  imports: [
    LoggerModule.forRoot({
      forRoutes: [],
      pinoHttp: [{ level: 'info', genReqId: (req) => (req as unknown as { id: string }).id, serializers: { req: serializeRequest, res: serializeResponse }, autoLogging: { ignore: (req) => req.url === '/metrics' } }, sink],
    }),
  ],
  controllers: [ProbeController],
})
class ProbeModule {}

async function probeApp(module: new () => unknown): Promise<NestExpressApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [module] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bufferLogs: true });
  app.useLogger(app.get(Logger));
  app.use(requestIdMiddleware);
  app.use(requestLogging(app));
  return app.init();
}

/** The request log mounted with app.use (src/common/request-log.ts), as nestjs-pino's own middleware logged. */
describe('requestLogging', () => {
  let app: NestExpressApplication;
  beforeAll(async () => {
    app = await probeApp(ProbeModule);
  });
  afterAll(() => app.close());

  it('writes one line per request and binds logs made during it to the request', async () => {
    lines.length = 0;
    await request(app.getHttpServer()).get('/probe').set('X-Request-Id', 'req-log-probe-1').expect(200);
    await new Promise((resolve) => setImmediate(resolve));
    const inside = lines.find((l) => l.msg === 'inside the request');
    const done = lines.filter((l) => l.msg === 'request completed');
    expect(inside).toMatchObject({ context: 'Probe', req: { id: 'req-log-probe-1', method: 'GET', url: '/probe' } });
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ req: { id: 'req-log-probe-1', method: 'GET', url: '/probe' }, res: { statusCode: 200 }, responseTime: expect.any(Number) });
  });

  it('skips the routes autoLogging ignores', async () => {
    lines.length = 0;
    await request(app.getHttpServer()).get('/metrics').expect(404);
    await request(app.getHttpServer()).get('/probe').expect(200);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.filter((l) => l.msg === 'request completed').map((l) => (l.req as { url: string }).url)).toEqual(['/probe']);
  });

  it('writes a 5xx as "request errored" with an error, still one line', async () => {
    lines.length = 0;
    await request(app.getHttpServer()).get('/probe/fails').set('X-Request-Id', 'req-log-probe-5xx').expect(503);
    await new Promise((resolve) => setImmediate(resolve));
    const logged = lines.filter((l) => l.msg === 'request errored' || l.msg === 'request completed');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      msg: 'request errored',
      req: { id: 'req-log-probe-5xx', method: 'GET', url: '/probe/fails' },
      res: { statusCode: 503 },
      err: { message: 'failed with status code 503' },
      responseTime: expect.any(Number),
    });
  });

  // docs/decisions.md, "Per-request overhead, third pass": one listener per logged request, none when the level writes no line.
  it('listens to one event per logged request, and to none when the level writes no request line', async () => {
    const logged = await request(app.getHttpServer()).get('/probe/listeners').expect(200);
    PinoLogger.root.level = 'warn';
    try {
      lines.length = 0;
      const quiet = await request(app.getHttpServer()).get('/probe/listeners').expect(200);
      await new Promise((resolve) => setImmediate(resolve));
      expect(logged.body).toEqual({ close: quiet.body.close + 1, finish: quiet.body.finish });
      expect(lines.filter((l) => l.msg === 'request completed')).toHaveLength(0);
    } finally {
      PinoLogger.root.level = 'info';
    }
  });
});
