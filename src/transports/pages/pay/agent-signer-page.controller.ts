import { Controller, Get, Header, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../../kernel/auth/auth.decorators';
import { AppError } from '../../../common/errors/app-error';
import { AppConfig } from '../../../config/app-config';
import { AgentsService } from '../../../modules/agents/agents.service';
import { renderAgentSignerPage } from './agent-signer-page.render';
import { renderNotFound } from './page-shell';
import { validate as isUuid } from 'uuid';


/**
 * The agent owner's signer page `{checkout_host}/agents/{id}/signer` (docs/architecture.md §16).
 * Public: it shows only the agent's public addresses, and changing anything takes the owner
 * wallet's EnableSigner signature (verified by `POST /api/v1/agents/{id}/signer`).
 */
@ApiExcludeController()
@Controller('agents')
export class AgentSignerPageController {
  constructor(
    private readonly agents: AgentsService,
    private readonly config: AppConfig,
  ) {}

  @Get(':id/signer')
  @Public()
  @Header('Cache-Control', 'no-store')
  async page(@Param('id') id: string, @Res() res: Response): Promise<void> {
    try {
      if (!isUuid(id)) throw AppError.notFound('agent');
      const agent = await this.agents.view(id);
      res.type('html').send(renderAgentSignerPage({ agent, chainId: this.config.env.CHAIN_ID }));
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'not_found') throw err;
      res.status(404).type('html').send(renderNotFound('agent'));
    }
  }
}
