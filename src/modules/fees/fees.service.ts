import { Injectable } from '@nestjs/common';
import { FeeQuote, FeeSource, quoteFee } from '@lib/money';

/** The one fee service (docs/architecture.md §6): every FeeQuote in the API comes from here. */
@Injectable()
export class FeesService {
  /** @param grossUnits amount in USDC base units. */
  quote(source: FeeSource, grossUnits: bigint): FeeQuote {
    return quoteFee(source, grossUnits);
  }
}
