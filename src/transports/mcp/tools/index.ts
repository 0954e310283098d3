import type { Provider } from '@nestjs/common';
import type { McpTool, ServiceTool } from '../mcp-tool';
import { CheckoutCreateTool, CreateCheckoutTool } from './checkout-create.tool';
import { CheckoutGetTool } from './checkout-get.tool';
import { CheckoutListTool } from './checkout-list.tool';
import { EscrowAcceptTool, EscrowCancelTool, EscrowDeclineTool, EscrowDisputeTool, EscrowMarkDeliveredTool, EscrowReleaseTool } from './escrow-action.tool';
import { EscrowGetTool, EscrowListTool } from './escrow-read.tool';
import { InvoiceCreateTool, InvoiceGetTool, InvoiceListTool, InvoiceSendTool } from './invoice.tool';
import { AgentGetTool, CreateEscrowTool, GetBalanceTool, PayTool } from './agent.tool';
import { ListMandatesTool } from './mandates.tool';
import { MeTool } from './me.tool';
import { OfferingCreateTool, OfferingGetTool, OfferingListTool, OfferingUpdateTool } from './offering.tool';
import { PaymentStatusTool } from './payment-status.tool';
import { RefundCancelTool, RefundCreateTool, RefundGetTool, RefundListTool, RefundSubmitTool } from './refund.tool';
import { VerificationCheckoutTool } from './verification-checkout.tool';
import { VerificationConfirmTool } from './verification-confirm.tool';
import { VerificationGetTool } from './verification-get.tool';
import { VerificationStartTool } from './verification-start.tool';
import { WebhookDeliveriesListTool, WebhookDeliveriesRetryTool } from './webhook-deliveries.tool';
import { WebhookEndpointGetTool, WebhookEndpointPutTool } from './webhook-endpoint.tool';
import { BalanceTransactionListTool } from './balance-transactions.tool';

/** Injection token of the list of every tool. */
export const MCP_TOOLS = Symbol('MCP_TOOLS');

/** Every svc_* tool class; a new tool is one file plus one entry here. */
export const TOOL_CLASSES = [
  MeTool,
  CheckoutCreateTool,
  CreateCheckoutTool,
  CheckoutGetTool,
  CheckoutListTool,
  EscrowListTool,
  EscrowGetTool,
  EscrowAcceptTool,
  EscrowDeclineTool,
  EscrowMarkDeliveredTool,
  EscrowReleaseTool,
  EscrowCancelTool,
  EscrowDisputeTool,
  WebhookEndpointGetTool,
  WebhookEndpointPutTool,
  WebhookDeliveriesListTool,
  WebhookDeliveriesRetryTool,
  PaymentStatusTool,
  VerificationGetTool,
  VerificationCheckoutTool,
  VerificationConfirmTool,
  VerificationStartTool,
  OfferingCreateTool,
  OfferingGetTool,
  OfferingListTool,
  OfferingUpdateTool,
  InvoiceCreateTool,
  InvoiceGetTool,
  InvoiceListTool,
  InvoiceSendTool,
  AgentGetTool,
  GetBalanceTool,
  PayTool,
  CreateEscrowTool,
  ListMandatesTool,
  RefundCreateTool,
  RefundGetTool,
  RefundListTool,
  RefundSubmitTool,
  RefundCancelTool,
  BalanceTransactionListTool,
];

/** Providers: each tool, and MCP_TOOLS = all of them. */
export const TOOL_PROVIDERS: Provider[] = [
  ...TOOL_CLASSES,
  { provide: MCP_TOOLS, inject: TOOL_CLASSES, useFactory: (...tools: Array<McpTool | ServiceTool>) => tools },
];
