import { Foundation1795300000000 } from './1795300000000-Foundation';
import { Webhooks1795300003000 } from './1795300003000-Webhooks';
import { Escrow1795300005000 } from './1795300005000-Escrow';
import { EscrowIntegrity1795300006000 } from './1795300006000-EscrowIntegrity';
import { WebhookDeliveryTargets1795300007000 } from './1795300007000-WebhookDeliveryTargets';
import { Offerings1795300010000 } from './1795300010000-Offerings';
import { Invoices1795300011000 } from './1795300011000-Invoices';
import { Verification1795300012000 } from './1795300012000-Verification';
import { Agents1795300013000 } from './1795300013000-Agents';
import { X4021795300020000 } from './1795300020000-X402';
import { A2a1795300030000 } from './1795300030000-A2a';
import { Mandates1795300040000 } from './1795300040000-Mandates';
import { CheckoutRelays1795300050000 } from './1795300050000-CheckoutRelays';
import { CheckoutEscrowAttempts1795300060000 } from './1795300060000-CheckoutEscrowAttempts';
import { PaymentTaskIdentity1795300070000 } from './1795300070000-PaymentTaskIdentity';
import { TraceContext1795300072000 } from './1795300072000-TraceContext';
import { X402Pending1795300073000 } from './1795300073000-X402Pending';
import { RelayerReplacements1795300075000 } from './1795300075000-RelayerReplacements';
import { Console1795300076000 } from './1795300076000-Console';
import { ApiKeyLastUsed1795300077000 } from './1795300077000-ApiKeyLastUsed';
import { ChainCursorHash1795300077500 } from './1795300077500-ChainCursorHash';
import { ReorgUnwind1795300081000 } from './1795300081000-ReorgUnwind';
import { ReconcileCancellations1795300081100 } from './1795300081100-ReconcileCancellations';
import { Refunds1795300085000 } from './1795300085000-Refunds';
import { ReconcileBatches1795819654293 } from './1795819654293-ReconcileBatches';
import { CheckoutEscrowIndex1795819654294 } from './1795819654294-CheckoutEscrowIndex';
import { EscrowRecentOrder1795819654295 } from './1795819654295-EscrowRecentOrder';
import { ApiKeyCreatedBy1795300078000 } from './1795300078000-ApiKeyCreatedBy';
import { PayoutAddressProven1795300078100 } from './1795300078100-PayoutAddressProven';
import { BalanceTransactions1795300084000 } from './1795300084000-BalanceTransactions';
import { OutboxPendingOrder1795300083000 } from './1795300083000-OutboxPendingOrder';
import { RelayerLiveIntent1795300079000 } from './1795300079000-RelayerLiveIntent';

/** Every migration in order; listed as classes (no globs) so the same list works in dist and jest. */
export const MIGRATIONS = [
  Foundation1795300000000,
  Webhooks1795300003000,
  Escrow1795300005000,
  EscrowIntegrity1795300006000,
  WebhookDeliveryTargets1795300007000,
  Offerings1795300010000,
  Invoices1795300011000,
  Verification1795300012000,
  Agents1795300013000,
  X4021795300020000,
  A2a1795300030000,
  Mandates1795300040000,
  CheckoutRelays1795300050000,
  CheckoutEscrowAttempts1795300060000,
  PaymentTaskIdentity1795300070000,
  TraceContext1795300072000,
  X402Pending1795300073000,
  RelayerReplacements1795300075000,
  Console1795300076000,
  ApiKeyLastUsed1795300077000,
  ChainCursorHash1795300077500,
  ApiKeyCreatedBy1795300078000,
  PayoutAddressProven1795300078100,
  RelayerLiveIntent1795300079000,
  ReorgUnwind1795300081000,
  ReconcileCancellations1795300081100,
  OutboxPendingOrder1795300083000,
  BalanceTransactions1795300084000,
  Refunds1795300085000,
  ReconcileBatches1795819654293,
  CheckoutEscrowIndex1795819654294,
  EscrowRecentOrder1795819654295,
];
