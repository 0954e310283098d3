import { Controller, Get, Logger as NestLogger, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger, LoggerModule } from 'nestjs-pino';
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

/** The request log mounted with app.use (src/common/request-log.ts), as nestjs-pino's own middleware logged. */
describe('requestLogging', () => {
  let app: NestExpressApplication;
  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [ProbeModule] }).compile();
    app = moduleRef.createNestApplication<NestExpressApplication>({ bufferLogs: true });
    app.useLogger(app.get(Logger));
    app.use(requestIdMiddleware);
    app.use(requestLogging(app));
    await app.init();
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
});
