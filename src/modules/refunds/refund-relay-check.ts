import { Injectable, Logger, Module } from '@nestjs/common';
import { ChainAccess } from '../../chain/chain-access.service';
import { RelayIntentCheck, RelayIntentChecks, RelayUsability } from '../../chain/relayer/relay-intent-check';
import type { RelayTxRow } from '../../chain/relayer/relayer.repository';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { authorizationUsability } from '../payments/authorization-relay-check';
import { REFUND_RELAY_PURPOSE } from './refunds.service';

/**
 * The relay intent check of refunds (`refund`, DESIGN §21, §22): a refund relays the payee's
 * transferWithAuthorization, dead only when a read at head − CONFIRMATIONS shows it used, cancelled or
 * expired ({@link authorizationUsability}). Registers itself with the relayer's {@link RelayIntentChecks}.
 */
@Injectable()
export class RefundRelayCheck implements RelayIntentCheck {
  private readonly logger = new Logger('RefundRelayCheck');
  readonly purposes = [REFUND_RELAY_PURPOSE] as const;

  constructor(
    private readonly chain: ChainAccess,
    checks: RelayIntentChecks,
  ) {
    checks.register(this);
  }

  stillUsable(row: Pick<RelayTxRow, 'data'>): Promise<RelayUsability> {
    return authorizationUsability(this.chain, row.data, this.logger);
  }
}

/** {@link RefundRelayCheck} on its own (see PaymentRelayCheckModule). */
@Module({ imports: [RelayerModule], providers: [RefundRelayCheck], exports: [RefundRelayCheck] })
export class RefundRelayCheckModule {}
