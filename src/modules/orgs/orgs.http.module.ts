import { Module } from '@nestjs/common';
import { MeController, OAuthController } from './orgs.controller';
import { OrgsModule } from './orgs.module';
import { ChainModule } from '../../chain/chain.module';
import { PayoutBalanceService } from './payout-balance.service';

/** `GET /api/v1/me`, `GET /api/v1/payout-balance` and `POST /oauth/token`; api only (docs/architecture.md §1). */
@Module({ imports: [OrgsModule, ChainModule], providers: [PayoutBalanceService], controllers: [MeController, OAuthController] })
export class OrgsHttpModule {}
