import { AppError } from '../../common/errors/app-error';
import type { PaymentDto } from '../../modules/payments/dto/payment.dto';
import { errorStatus, paymentRequired, paymentStatus } from './a2a-task-status';

const payment = (over: Partial<PaymentDto>): PaymentDto => ({
  id: 'p1',
  status: 'submitted',
  to: 'acme',
  toAddress: '0x' + '22'.repeat(20),
  amount: '5.00',
  fee: '0.00',
  txHash: null,
  mode: 'a2a',
  mandateId: null,
  taskId: 't1',
  failureReason: null,
  createdAt: '2026-11-23T00:00:00.000Z',
  updatedAt: '2026-11-23T00:00:00.000Z',
  ...over,
});

const meta = (s: { message: Record<string, unknown> }) => s.message.metadata as Record<string, unknown>;

describe('a2a-x402 task states of a payment (docs/architecture.md §14)', () => {
  it('submitted → working + payment-submitted; succeeded → completed + receipt; failed → failed with the extension code', () => {
    expect(paymentStatus('t1', 'c1', payment({}), 31337, '0xpayer')).toMatchObject({ state: 'TASK_STATE_WORKING' });
    expect(meta(paymentStatus('t1', 'c1', payment({}), 31337, '0xpayer'))).toMatchObject({ 'x402.payment.status': 'payment-submitted', paymentId: 'p1' });
    const done = paymentStatus('t1', 'c1', payment({ status: 'succeeded', txHash: '0xabc' }), 31337, '0xpayer');
    expect(done.state).toBe('TASK_STATE_COMPLETED');
    expect(meta(done)).toEqual({ 'x402.payment.status': 'payment-completed', 'x402.payment.receipts': [{ success: true, transaction: '0xabc', network: 'eip155:31337', payer: '0xpayer', amount: '5.00' }] });
    expect(meta(paymentStatus('t1', 'c1', payment({ status: 'failed', failureReason: 'expired' }), 1, '0x'))).toMatchObject({ 'x402.payment.status': 'payment-failed', 'x402.payment.error': 'EXPIRED_PAYMENT' });
    expect(meta(paymentStatus('t1', 'c1', payment({ status: 'failed', failureReason: 'cancelled' }), 1, '0x'))).toMatchObject({ 'x402.payment.error': 'SETTLEMENT_FAILED' });
  });

  it('refusals carry our error body; insufficient balance and a bad amount map to the extension codes', () => {
    const broke = errorStatus('t', 'c', new AppError('policy_denied', 'no money', { rule: 'insufficient_balance' }));
    expect(broke.state).toBe('TASK_STATE_FAILED');
    expect(meta(broke)).toEqual({ 'x402.payment.status': 'payment-failed', 'x402.payment.error': 'INSUFFICIENT_FUNDS', error: { error: 'no money', code: 'policy_denied', details: { rule: 'insufficient_balance' } } });
    expect(meta(errorStatus('t', 'c', AppError.invalidParam('amount', 'bad')))['x402.payment.error']).toBe('INVALID_AMOUNT');
    expect(meta(errorStatus('t', 'c', new AppError('agent_paused', 'paused')))['x402.payment.error']).toBe('agent_paused');
    expect(meta(errorStatus('t', 'c', new AppError('forbidden', 'no'), false))).toEqual({ error: { error: 'no', code: 'forbidden' } });
  });

  it('payment requirements: x402 v2 exact on eip155:<chain>, base units as a string, the token EIP-712 domain in extra', () => {
    const r = paymentRequired({ chainId: 8453, asset: '0xusdc', payTo: '0xpay', amountUnits: 1_250_000n, eip712: { name: 'USD Coin', version: '2' }, maxTimeoutSeconds: 600, resource: 'https://x/api/v1/a2a' });
    expect(r.x402Version).toBe(2);
    expect(r.accepts).toEqual([{ scheme: 'exact', network: 'eip155:8453', amount: '1250000', asset: '0xusdc', payTo: '0xpay', maxTimeoutSeconds: 600, extra: { name: 'USD Coin', version: '2' } }]);
  });
});
