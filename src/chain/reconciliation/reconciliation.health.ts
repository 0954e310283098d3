import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { ReconciliationService } from './reconciliation.service';

/**
 * `/health/ready` detail `reconciliation` (DESIGN §18): the last pass's time, block, whether it was clean
 * and its mismatch counts by kind. The ids stay out of this public route (they name other organisations'
 * escrows and payments): they are in the log line of each mismatch and in `cli reconcile`. Always `up`: a ledger mismatch is an
 * operator's alarm (logs, `reconcile_mismatches_total`), not a reason for a load balancer to drop every
 * replica and stop all payments. A Redis error is reported in the detail and stays `up` too (the redis
 * check already fails readiness for it).
 */
@Injectable()
export class ReconciliationHealthIndicator {
  constructor(
    private readonly reconciliation: ReconciliationService,
    private readonly indicator: HealthIndicatorService,
  ) {}

  async isHealthy(key = 'reconciliation') {
    const check = this.indicator.check(key);
    try {
      const last = await this.reconciliation.lastReport();
      if (!last) return check.up({ lastRunAt: null });
      return check.up({
        lastRunAt: last.ranAt,
        block: last.block,
        clean: last.clean,
        mismatches: last.counts,
        // A surplus in the escrow contract (issue 30): shown, not a mismatch.
        notices: Object.fromEntries((last.notices ?? []).map((n) => [n.kind, n.actual])),
      });
    } catch (err) {
      return check.up({ error: (err as Error).message });
    }
  }
}
