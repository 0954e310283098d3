import { randomUUID } from 'node:crypto';
import { AppError } from '../../../common/errors/app-error';
import type { Principal } from '../../../kernel/auth/principal';
import { expandScopes } from '../../../kernel/auth/scopes';
import type { IdempotencyService } from '../../../kernel/idempotency/idempotency.service';
import { Runner } from '../../../kernel/runner';
import type { CheckoutService } from '../../../modules/checkout/checkout.service';
import type { EscrowService } from '../../../modules/escrow/escrow.service';
import type { PaymentsService } from '../../../modules/payments/payments.service';
import { McpService } from '../mcp.service';
import { PaymentStatusTool } from './payment-status.tool';

const merchant = (granted: string[]): Principal => ({
  kind: 'merchant',
  credentialId: 'k1',
  organizationId: 'o1',
  agentId: null,
  actor: 'merchant',
  grantedScopes: granted,
  scopes: expandScopes(granted),
});

/**
 * svc_get_payment_status over a funded checkout (issue 31): the escrow beside the checkout is read
 * with the caller's access, and a failure of that read is the tool's error body, never a silent
 * `escrow: null`.
 */
describe('PaymentStatusTool', () => {
  const sessionId = randomUUID();
  const escrowId = randomUUID();
  const session = { id: sessionId, status: 'funded', escrowId };
  const checkout = { get: jest.fn(() => Promise.resolve(session)) } as unknown as CheckoutService;
  const payments = {} as PaymentsService;
  const call = (escrows: object, granted: string[]) => {
    const tool = new PaymentStatusTool(checkout, escrows as unknown as EscrowService, payments);
    const mcp = new McpService([tool], new Runner({} as IdempotencyService));
    return (mcp as unknown as { call(p: Principal, requestId: string, name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; structuredContent?: Record<string, unknown> }> }).call(
      merchant(granted),
      'req-1',
      'svc_get_payment_status',
      { checkoutSessionId: sessionId },
    );
  };

  it('an escrow read that fails is reported through the normal error body (it was swallowed into escrow: null)', async () => {
    const failing = { get: jest.fn(() => Promise.reject(new AppError('unavailable', 'The chain node did not answer', { reason: 'chain_unavailable' }))) };
    const result = await call(failing, ['checkout:read', 'escrow:read']);
    expect(failing.get).toHaveBeenCalledWith(expect.anything(), escrowId);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ code: 'unavailable', details: { reason: 'chain_unavailable' }, requestId: 'req-1' });
  });

  it('answers the checkout with its escrow when the caller may read escrows, and without it (escrow: null, not read) when not', async () => {
    const escrow = { id: escrowId, status: 'funded' };
    const reading = { get: jest.fn(() => Promise.resolve(escrow)) };
    expect((await call(reading, ['checkout:read', 'escrow:read'])).structuredContent).toEqual({ checkoutSession: session, status: 'funded', escrow });
    const untouched = { get: jest.fn() };
    expect((await call(untouched, ['checkout:read'])).structuredContent).toEqual({ checkoutSession: session, status: 'funded', escrow: null });
    expect(untouched.get).not.toHaveBeenCalled();
  });
});
