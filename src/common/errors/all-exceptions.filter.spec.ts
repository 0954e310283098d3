import { ServiceUnavailableException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { ChainTxPendingError } from '@lib/chain';
import { AppError } from './app-error';
import { isDependencyDown, toAppError } from './all-exceptions.filter';

describe('toAppError for an unreachable dependency', () => {
  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['an admin shutdown (57P01) wrapped by TypeORM', new QueryFailedError('SELECT 1', [], Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))],
    ['a starting server (57P03)', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['a dropped connection', new Error('Connection terminated unexpectedly')],
    ['a pool wait timeout', new Error('timeout exceeded when trying to connect')],
  ])('answers 503 unavailable with Retry-After for %s', (_, err) => {
    expect(isDependencyDown(err)).toBe(true);
    const e = toAppError(err);
    expect(e).toBeInstanceOf(AppError);
    expect([e.code, e.status, e.headers['Retry-After']]).toEqual(['unavailable', 503, '2']);
  });

  it.each([
    ['a unique violation', new QueryFailedError('INSERT', [], Object.assign(new Error('duplicate key value'), { code: '23505' }))],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
  ])('keeps %s as 500 internal', (_, err) => {
    expect(isDependencyDown(err)).toBe(false);
    expect([toAppError(err).code, toAppError(err).status]).toEqual(['internal', 500]);
  });
});

describe('toAppError for a 503 HttpException (readiness)', () => {
  it('answers 503 unavailable and names the failing checks', () => {
    const e = toAppError(new ServiceUnavailableException({ status: 'error', error: { database: { status: 'down' } } }));
    expect([e.code, e.status, e.details]).toEqual(['unavailable', 503, { checks: { database: { status: 'down' } } }]);
  });
});

describe('toAppError for a chain node error (DESIGN §22)', () => {
  it('answers 503 unavailable chain_unavailable with Retry-After, never 500', () => {
    const timeout = Object.assign(new Error('request timeout (code=TIMEOUT)'), { code: 'TIMEOUT' });
    const e = toAppError(timeout);
    expect([e.code, e.status, e.details, e.headers['Retry-After']]).toEqual(['unavailable', 503, { reason: 'chain_unavailable' }, '2']);
  });
});

describe('toAppError for a send broadcast but not confirmed in time (DESIGN §18, §22; review F3)', () => {
  it('answers 409 pending with the hash, no Retry-After, even when the wait ended on a node timeout', () => {
    const hash = `0x${'ab'.repeat(32)}`;
    const cause = Object.assign(new Error('timeout'), { code: 'TIMEOUT' });
    const e = toAppError(new ChainTxPendingError('voidTerms', hash, { cause }));
    expect([e.code, e.status, e.details, e.headers['Retry-After']]).toEqual(['invalid_request', 409, { reason: 'pending', txHash: hash }, undefined]);
  });
});
