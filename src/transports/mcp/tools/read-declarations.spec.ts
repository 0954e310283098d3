import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA } from '@nestjs/common/constants';
import { PUBLIC_ROUTE } from '../../../kernel/auth/auth.decorators';
import { routeOperation } from '../../../kernel/http';
import type { OperationSpec } from '../../../kernel/operation';
import { AgentEscrowsController } from '../../../modules/agent-escrows/agent-escrows.controller';
import { GET_AGENT_ESCROW, LIST_AGENT_ESCROWS } from '../../../modules/agent-escrows/agent-escrows.operations';
import { AgentsController } from '../../../modules/agents/agents.controller';
import { GET_AGENT, GET_AGENT_BALANCE } from '../../../modules/agents/agents.operations';
import { BalanceController } from '../../../modules/balance/balance.controller';
import { LIST_BALANCE_TRANSACTIONS } from '../../../modules/balance/balance.operations';
import { CheckoutController } from '../../../modules/checkout/checkout.controller';
import { GET_CHECKOUT, LIST_CHECKOUTS } from '../../../modules/checkout/checkout.operations';
import { EscrowController } from '../../../modules/escrow/escrow.controller';
import { GET_ESCROW, LIST_ESCROWS } from '../../../modules/escrow/escrow.operations';
import { InvoicesController } from '../../../modules/invoices/invoices.controller';
import { GET_INVOICE, LIST_INVOICES } from '../../../modules/invoices/invoices.operations';
import { MandatesController } from '../../../modules/mandates/mandates.controller';
import { GET_MANDATE, LIST_MANDATES } from '../../../modules/mandates/mandates.operations';
import { OfferingsController } from '../../../modules/offerings/offerings.controller';
import { GET_OFFERING, LIST_OFFERINGS } from '../../../modules/offerings/offerings.operations';
import { MeController } from '../../../modules/orgs/orgs.controller';
import { GET_ME } from '../../../modules/orgs/orgs.operations';
import { PaymentsController } from '../../../modules/payments/payments.controller';
import { GET_PAYMENT_STATUS } from '../../../modules/payments/payments.operations';
import { RefundsController } from '../../../modules/refunds/refunds.controller';
import { GET_REFUND, LIST_REFUNDS } from '../../../modules/refunds/refunds.operations';
import { VerificationController } from '../../../modules/verification/verification.controller';
import { GET_VERIFICATION } from '../../../modules/verification/verification.operations';
import { WebhookDeliveriesController, WebhookEndpointsController } from '../../../modules/webhooks/webhooks.controller';
import { GET_WEBHOOK_ENDPOINT, LIST_WEBHOOK_DELIVERIES } from '../../../modules/webhooks/webhooks.operations';
import { AgentGetTool, GetBalanceTool } from './agent.tool';
import { BalanceTransactionListTool } from './balance-transactions.tool';
import { CheckoutGetTool } from './checkout-get.tool';
import { CheckoutListTool } from './checkout-list.tool';
import { EscrowGetTool, EscrowListTool } from './escrow-read.tool';
import { InvoiceGetTool, InvoiceListTool } from './invoice.tool';
import { ListMandatesTool } from './mandates.tool';
import { MeTool } from './me.tool';
import { OfferingGetTool, OfferingListTool } from './offering.tool';
import { PaymentStatusTool } from './payment-status.tool';
import { RefundGetTool, RefundListTool } from './refund.tool';
import { VerificationGetTool } from './verification-get.tool';
import { WebhookDeliveriesListTool } from './webhook-deliveries.tool';
import { WebhookEndpointGetTool } from './webhook-endpoint.tool';

type ReadTool = { declaration: OperationSpec<object> };
const tool = (cls: new (...args: never[]) => ReadTool): ReadTool => new cls(...([null, null, null] as never[]));

/** Reads are operations too (issue 31, DESIGN §17): declared once in their domain, stated by REST with `@Runs`, named by MCP. */
describe('read declarations', () => {
  it('every read tool names the declaration its REST route states with @Runs (the same object), with idempotency none', () => {
    const pairs: Array<[ReadTool, object, OperationSpec<object>]> = [
      [tool(CheckoutGetTool), CheckoutController.prototype.get, GET_CHECKOUT],
      [tool(CheckoutListTool), CheckoutController.prototype.list, LIST_CHECKOUTS],
      [tool(EscrowGetTool), EscrowController.prototype.get, GET_ESCROW],
      [tool(EscrowListTool), EscrowController.prototype.list, LIST_ESCROWS],
      [tool(InvoiceGetTool), InvoicesController.prototype.get, GET_INVOICE],
      [tool(InvoiceListTool), InvoicesController.prototype.list, LIST_INVOICES],
      [tool(OfferingGetTool), OfferingsController.prototype.get, GET_OFFERING],
      [tool(OfferingListTool), OfferingsController.prototype.list, LIST_OFFERINGS],
      [tool(RefundGetTool), RefundsController.prototype.get, GET_REFUND],
      [tool(RefundListTool), RefundsController.prototype.list, LIST_REFUNDS],
      [tool(VerificationGetTool), VerificationController.prototype.get, GET_VERIFICATION],
      [tool(WebhookEndpointGetTool), WebhookEndpointsController.prototype.get, GET_WEBHOOK_ENDPOINT],
      [tool(WebhookDeliveriesListTool), WebhookDeliveriesController.prototype.list, LIST_WEBHOOK_DELIVERIES],
      [tool(AgentGetTool), AgentsController.prototype.agent, GET_AGENT],
      [tool(GetBalanceTool), AgentsController.prototype.balance, GET_AGENT_BALANCE],
      [tool(ListMandatesTool), MandatesController.prototype.list, LIST_MANDATES],
      [tool(MeTool), MeController.prototype.me, GET_ME],
      [tool(BalanceTransactionListTool), BalanceController.prototype.list, LIST_BALANCE_TRANSACTIONS],
    ];
    for (const [t, handler, declared] of pairs) {
      expect(routeOperation(handler)).toBe(declared);
      expect(t.declaration).toBe(declared);
      expect(declared.idempotency).toBe('none');
    }
    expect(tool(PaymentStatusTool).declaration).toBe(GET_PAYMENT_STATUS);
  });

  it('every authenticated GET route of the API states its read declaration (no scope restated on a route)', () => {
    const controllers = [
      AgentEscrowsController, AgentsController, BalanceController, CheckoutController, EscrowController, InvoicesController, MandatesController,
      OfferingsController, MeController, PaymentsController, RefundsController, VerificationController, WebhookEndpointsController, WebhookDeliveriesController,
    ];
    const undeclared: string[] = [];
    for (const c of controllers) {
      const proto = c.prototype as unknown as Record<string, object>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = proto[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        if (Reflect.getMetadata(METHOD_METADATA, handler) !== RequestMethod.GET || Reflect.getMetadata(PUBLIC_ROUTE, handler)) continue;
        const op = routeOperation(handler);
        if (!op || op.idempotency !== 'none') undeclared.push(`${c.name}.${name}`);
      }
    }
    expect(undeclared).toEqual([]);
    expect(routeOperation(AgentEscrowsController.prototype.list)).toBe(LIST_AGENT_ESCROWS);
    expect(routeOperation(AgentEscrowsController.prototype.get)).toBe(GET_AGENT_ESCROW);
    expect(routeOperation(MandatesController.prototype.get)).toBe(GET_MANDATE);
  });
});
