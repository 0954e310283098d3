import { Controller, Get, Header, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { AppConfig } from '../../../config/app-config';
import { Public } from '../../../kernel/auth/auth.decorators';
import { CheckoutMapper } from '../../../modules/checkout/checkout.mapper';
import { CheckoutService } from '../../../modules/checkout/checkout.service';
import { EscrowService } from '../../../modules/escrow/escrow.service';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { renderNotFound } from './page-shell';
import { renderPayPage } from './pay-page.render';
import { validate as isUuid } from 'uuid';


/** The hosted pay page at `{checkout_host}/checkout/{id}` (docs/architecture.md §1 checkout host, §16). Public: the id is the capability. */
@ApiExcludeController()
@Controller('checkout')
export class PayPageController {
  constructor(
    private readonly checkout: CheckoutService,
    private readonly mapper: CheckoutMapper,
    private readonly escrows: EscrowService,
    private readonly orgs: OrgsService,
    private readonly config: AppConfig,
  ) {}

  @Get(':id')
  @Public()
  @Header('Cache-Control', 'no-store')
  async page(@Param('id') id: string, @Res() res: Response): Promise<void> {
    const session = isUuid(id) ? await this.checkout.findById(id) : null;
    if (!session) {
      res.status(404).type('html').send(renderNotFound('checkout'));
      return;
    }
    const dto = this.mapper.toDto(session);
    const org = await this.orgs.getOrganization(session.organizationId);
    const funding = dto.status === 'open' ? await this.escrows.fundingTerms(id).catch(() => null) : null;
    res.type('html').send(renderPayPage({ merchant: org?.name ?? 'Merchant', session: dto, funding, localChain: this.config.env.CHAIN_ID === 31337 }));
  }
}
