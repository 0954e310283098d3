import { Controller, Get, Header, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../../kernel/auth/auth.decorators';
import { AppError } from '../../../common/errors/app-error';
import { InvoicesService } from '../../../modules/invoices/invoices.service';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { renderNotFound } from './page-shell';
import { renderInvoicePage } from './invoice-page.render';
import { validate as isUuid } from 'uuid';


/** The hosted invoice page `{checkout_host}/invoices/{id}` (the invoice's payUrl). Public: the id is the capability. */
@ApiExcludeController()
@Controller('invoices')
export class InvoicePageController {
  constructor(
    private readonly invoices: InvoicesService,
    private readonly orgs: OrgsService,
  ) {}

  @Get(':id')
  @Public()
  @Header('Cache-Control', 'no-store')
  async page(@Param('id') id: string, @Res() res: Response): Promise<void> {
    try {
      if (!isUuid(id)) throw AppError.notFound('invoice');
      const view = await this.invoices.pageView(id);
      const org = await this.orgs.getOrganization(view.organizationId);
      res.type('html').send(renderInvoicePage({ merchant: org?.name ?? 'Merchant', view }));
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'not_found') throw err;
      res.status(404).type('html').send(renderNotFound('invoice'));
    }
  }
}
