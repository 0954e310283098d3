import { Module } from '@nestjs/common';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { OrgsModule } from '../orgs/orgs.module';
import { PayPageController } from './pay-page.controller';

/** The hosted pay page `GET /checkout/:id`; api only (docs/architecture.md §1). The feature has no services of its own. */
@Module({ imports: [CheckoutModule, EscrowModule, OrgsModule], controllers: [PayPageController] })
export class PayPageHttpModule {}
