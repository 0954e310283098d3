import { IdempotencyRecord } from '../common/idempotency/idempotency-record.entity';
import { OutboxEvent } from '../common/outbox/outbox-event.entity';
import { CheckoutSession } from '../modules/checkout/checkout.entity';
import { Escrow, EscrowChainEventRow } from '../modules/escrow/escrow.entity';
import { Agent, ApiKey, OAuthClient, OAuthToken, Organization } from '../modules/orgs/orgs.entity';
import { OrganizationVerification, VerificationWalletPayment } from '../modules/verification/verification.entity';
import { WebhookDelivery, WebhookEndpoint } from '../modules/webhooks/webhooks.entity';
import { Payment } from '../modules/payments/payment.entity';
import { Mandate } from '../modules/mandates/mandate.entity';
import { Offering } from '../modules/offerings/offerings.entity';
import { Invoice, InvoiceEmail } from '../modules/invoices/invoices.entity';
import { ConsoleNonce, ConsoleSession, OrganizationOwner } from '../modules/console/console.entity';

/** Every TypeORM entity, listed as classes so dist and jest load the same set. */
export const ENTITIES = [
  Organization,
  Agent,
  ApiKey,
  OAuthClient,
  OAuthToken,
  CheckoutSession,
  Escrow,
  EscrowChainEventRow,
  IdempotencyRecord,
  OutboxEvent,
  WebhookEndpoint,
  WebhookDelivery,
  Payment,
  Mandate,
  OrganizationVerification,
  VerificationWalletPayment,
  Offering,
  Invoice,
  InvoiceEmail,
  ConsoleNonce,
  ConsoleSession,
  OrganizationOwner,
];
