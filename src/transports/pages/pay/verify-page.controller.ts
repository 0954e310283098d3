import { Body, Controller, Get, Header, Param, Post, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../../kernel/auth/auth.decorators';
import { SANDBOX_OUTCOMES, SandboxOutcome } from '../../../modules/verification/sandbox-identity.provider';
import { VerificationService } from '../../../modules/verification/verification.service';
import { renderNotFound, renderShell } from './page-shell';
import { renderVerifyPage } from './verify-page.render';

const TOKEN = /^vsb_[A-Za-z0-9]{16,64}$/;
const NOT_FOUND = renderNotFound('verification session');

/**
 * The sandbox identity provider's page on the checkout host (docs/architecture.md §16,
 * `/verify/{token}`). Public: the token is the capability. The answer is reported as the sandbox
 * provider's signed callback; 404 when the sandbox is not the configured provider.
 */
@ApiExcludeController()
@Controller('verify')
export class VerifyPageController {
  constructor(private readonly verification: VerificationService) {}

  @Get(':token')
  @Public()
  @Header('Cache-Control', 'no-store')
  async page(@Param('token') token: string, @Res() res: Response): Promise<void> {
    const session = TOKEN.test(token) ? await this.verification.sandboxSession(token) : null;
    if (!session) {
      res.status(404).type('html').send(NOT_FOUND);
      return;
    }
    res.type('html').send(renderVerifyPage(session));
  }

  /** The form POST: `outcome` = verified | requires_input | declined; then back to the page (303). */
  @Post(':token')
  @Public()
  @Header('Cache-Control', 'no-store')
  async answer(@Param('token') token: string, @Body() body: Record<string, unknown>, @Res() res: Response): Promise<void> {
    const outcome = body?.outcome;
    if (typeof outcome !== 'string' || !(SANDBOX_OUTCOMES as readonly string[]).includes(outcome)) {
      res.status(400).type('html').send(renderShell({ title: 'Bad request', main: '<h1>Bad request</h1><p>Choose one of the buttons.</p>' }));
      return;
    }
    const session = TOKEN.test(token) ? await this.verification.answerSandbox(token, outcome as SandboxOutcome) : null;
    if (!session) {
      res.status(404).type('html').send(NOT_FOUND);
      return;
    }
    res.redirect(303, `/verify/${token}`);
  }
}
