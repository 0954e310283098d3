import { Module } from '@nestjs/common';
import { eip3009RelayCheck } from '../../chain/relayer/eip3009-relay-check';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { REFUND_RELAY_PURPOSE } from './refunds.service';

/**
 * The relay intent check of refunds (`refund`, DESIGN §21, §22): a refund relays the payee's
 * transferWithAuthorization, dead only when a read at head − CONFIRMATIONS shows it used, cancelled or
 * expired (the chain room's Eip3009RelayCheck). A module of its own, as PaymentRelayCheckModule.
 */
@Module({ imports: [RelayerModule], providers: [eip3009RelayCheck('RefundRelayCheck', [REFUND_RELAY_PURPOSE])] })
export class RefundRelayCheckModule {}
