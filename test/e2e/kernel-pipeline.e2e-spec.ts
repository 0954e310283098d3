import { INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import { ApplicationConfig } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { CheckoutController } from '../../src/modules/checkout/checkout.controller';
import { IdempotencyInterceptor } from '../../src/kernel/idempotency/idempotency.interceptor';
import { useOrgApp } from '../support/app';

jest.setTimeout(30_000);

/**
 * What every REST request pays for (docs/decisions.md, "The runner's cost"): the kernel's three
 * guards and nothing idle; the idempotency interceptor only on the routes that declare it; no body
 * parsing without a body. Behaviour is the same as before: the suites of each route prove that.
 */
describe('the REST pipeline carries only the kernel steps a route declares', () => {
  const ctx = useOrgApp();

  it('has the kernel guards as its only global enhancers (the idle nestjs-cls guard and interceptor are dropped)', () => {
    const config = ctx.t.app.get(ApplicationConfig);
    expect(config.getGlobalGuards().map((g) => g.constructor.name)).toEqual(['AuthGuard', 'RateLimitGuard', 'CredentialConfirmGuard']);
    expect(config.getGlobalInterceptors()).toEqual([]);
  });

  it('binds the idempotency interceptor to @Idempotent routes only', () => {
    const on = (method: keyof CheckoutController) => (Reflect.getMetadata(INTERCEPTORS_METADATA, CheckoutController.prototype[method]) as unknown[] | undefined) ?? [];
    expect(on('create')).toEqual([IdempotencyInterceptor]);
    expect(on('get')).toEqual([]);
    expect(on('list')).toEqual([]);
  });

  it('still answers replays with Idempotent-Replayed and reads without a body', async () => {
    const key = `pipe-${randomUUID()}`;
    const body = { amount: '3.00', description: 'pipeline' };
    const first = await ctx.t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', ctx.org.key).set('Idempotency-Key', key).send(body).expect(200);
    expect(first.headers['idempotent-replayed']).toBe('false');
    const again = await ctx.t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', ctx.org.key).set('Idempotency-Key', key).send(body).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    const read = await ctx.t.http.get(`/api/v1/checkout-sessions/${first.body.id}`).set('X-Api-Key', ctx.org.key).expect(200);
    expect(read.headers['idempotent-replayed']).toBeUndefined();
    expect(read.body.amount).toBe('3.00');
  });

  it('parses a body sent without Content-Length (chunked) and refuses a POST without one as a validation error', async () => {
    // A streamed body goes out chunked (Transfer-Encoding, no Content-Length): it must still be parsed.
    const server = ctx.t.app.getHttpServer();
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const chunked = await fetch(`http://127.0.0.1:${port}/api/v1/checkout-sessions`, {
      method: 'POST',
      headers: { 'x-api-key': ctx.org.key, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(JSON.stringify({ amount: '1.50', description: 'chunked' })));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(200);
    expect(((await chunked.json()) as { amount: string }).amount).toBe('1.50');
    const empty = await ctx.t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', ctx.org.key);
    expect(empty.status).toBe(400);
    expect(empty.body.code).toBe('invalid_request');
  });

  it('reaches the MCP and well-known routers by their paths only (any case, as Express routes)', async () => {
    const resource = await ctx.t.http.get('/.well-known/oauth-protected-resource/mcp').expect(200);
    const issuer = new URL((resource.body as { authorization_servers: string[] }).authorization_servers[0]);
    const meta = await ctx.t.http.get(`/.well-known/oauth-authorization-server${issuer.pathname.replace(/\/$/, '')}`).expect(200);
    expect(meta.body.issuer).toBe(issuer.href.replace(/\/$/, ''));
    expect((await ctx.t.http.get('/.WELL-KNOWN/oauth-protected-resource/mcp')).status).toBe(200);
    expect((await ctx.t.http.post('/MCP').send({})).status).toBe(401);
  });
});
