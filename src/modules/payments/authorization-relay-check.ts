import { Module } from '@nestjs/common';
import { eip3009RelayCheck } from '../../chain/relayer/eip3009-relay-check';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { PAYMENT_RELAY_PURPOSE } from './transfer-payment-mode';

/**
 * The relay intent check of agent payments (`payment`) and of paid retries of our own x402 challenges
 * (`x402`): both relay a transferWithAuthorization, dead only when a read at head − CONFIRMATIONS shows
 * it used, cancelled or expired (the chain room's Eip3009RelayCheck, registered with the relayer's
 * RelayIntentChecks). A module of its own, so a process that runs the relayer's sender without the
 * payments domain's services (a relayer-only worker) still judges payment and x402 relays by a read.
 */
@Module({ imports: [RelayerModule], providers: [eip3009RelayCheck('PaymentRelayCheck', [PAYMENT_RELAY_PURPOSE, 'x402'])] })
export class PaymentRelayCheckModule {}
