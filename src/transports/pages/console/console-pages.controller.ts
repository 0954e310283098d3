import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../../../kernel/auth/auth.decorators';
import { AppConfig } from '../../../config/app-config';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { ConsoleAuthService } from './console-auth.service';
import { consoleBundle, renderConsoleNotFound, renderHome, renderSection, renderSignIn, Section, SECTIONS } from './console-pages.render';
import { sessionCookie } from './console-session.authenticator';
import { validate as isUuid } from 'uuid';


/**
 * The console pages at `{API origin}/console` (docs/architecture.md §19), server-rendered shells
 * filled by one bundled script that calls `/api/v1` as a `console` principal. Public routes in the
 * guard's sense: each reads the session cookie itself (a page is a GET; it changes nothing and
 * embeds the session's CSRF token). No session → the sign-in page; an organisation the address
 * does not own (or no such organisation, or a malformed id) → 404.
 */
@ApiExcludeController()
@Controller('console')
export class ConsolePagesController {
  constructor(
    private readonly auth: ConsoleAuthService,
    private readonly orgs: OrgsService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @Public()
  async home(@Req() req: Request, @Res() res: Response): Promise<void> {
    const token = sessionCookie(req, this.auth.cookieName);
    const session = await this.auth.session(token);
    this.headers(res);
    if (!session || !token) {
      res.type('html').send(renderSignIn({ chainId: this.config.env.CHAIN_ID }));
      return;
    }
    const [organizations, agents] = await Promise.all([this.orgs.ownedOrganizations(session.address), this.orgs.ownedAgents(session.address)]);
    res.type('html').send(renderHome({ address: session.address, csrf: ConsoleAuthService.csrfToken(token), chainId: this.config.env.CHAIN_ID, organizations, agents }));
  }

  @Get('assets/console.js')
  @Public()
  script(@Res() res: Response): void {
    const bundle = consoleBundle();
    if (!bundle) {
      res.status(404).type('text/plain').send('console.js is not built: run npm run build');
      return;
    }
    res.set({ 'Cache-Control': 'public, max-age=31536000, immutable', 'X-Content-Type-Options': 'nosniff', ETag: `"${bundle.hash}"` }).type('application/javascript; charset=utf-8').send(bundle.body);
  }

  /**
   * An agent's page for its owner address (DESIGN §19), whether or not the address owns the
   * agent's organisation: the script acts with `X-Console-Agent`. Anyone else → 404.
   */
  @Get('agents/:agent')
  @Public()
  async agentPage(@Param('agent') agentId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    this.headers(res);
    const signedIn = await this.signedIn(req, res);
    if (!signedIn) return;
    const { token, session } = signedIn;
    const agent = isUuid(agentId) ? await this.orgs.agentOwnedBy(agentId, session.address) : null;
    const org = agent ? await this.orgs.getOrganization(agent.organizationId) : null;
    if (!agent || !org) {
      res.status(404).type('html').send(renderConsoleNotFound());
      return;
    }
    res.type('html').send(
      renderSection({
        section: 'agents',
        item: agent.id,
        address: session.address,
        csrf: ConsoleAuthService.csrfToken(token),
        chainId: this.config.env.CHAIN_ID,
        usdc: this.config.env.USDC_ADDRESS,
        organization: { id: org.id, name: org.name, handle: org.handle },
        agentOwner: true,
      }),
    );
  }

  @Get('orgs/:org')
  @Public()
  overview(@Param('org') org: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.section(org, 'overview', undefined, req, res);
  }

  @Get('orgs/:org/:section')
  @Public()
  list(@Param('org') org: string, @Param('section') section: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.section(org, section, undefined, req, res);
  }

  @Get('orgs/:org/:section/:item')
  @Public()
  detail(@Param('org') org: string, @Param('section') section: string, @Param('item') item: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.section(org, section, item, req, res);
  }

  /** The request's console session and its cookie token; without one, redirects to the sign-in page and answers null. */
  private async signedIn(req: Request, res: Response): Promise<{ token: string; session: NonNullable<Awaited<ReturnType<ConsoleAuthService['session']>>> } | null> {
    const token = sessionCookie(req, this.auth.cookieName);
    const session = await this.auth.session(token);
    if (!session || !token) {
      res.redirect(303, '/console');
      return null;
    }
    return { token, session };
  }

  private async section(orgId: string, section: string, item: string | undefined, req: Request, res: Response): Promise<void> {
    this.headers(res);
    const signedIn = await this.signedIn(req, res);
    if (!signedIn) return;
    const { token, session } = signedIn;
    const known = SECTIONS.some(([s]) => s === section) && (item === undefined || isUuid(item));
    const org = known && isUuid(orgId) && (await this.orgs.isOwner(orgId, session.address)) ? await this.orgs.getOrganization(orgId) : null;
    if (!org) {
      res.status(404).type('html').send(renderConsoleNotFound());
      return;
    }
    res.type('html').send(
      renderSection({
        section: section as Section,
        item,
        address: session.address,
        csrf: ConsoleAuthService.csrfToken(token),
        chainId: this.config.env.CHAIN_ID,
        usdc: this.config.env.USDC_ADDRESS,
        organization: { id: org.id, name: org.name, handle: org.handle },
      }),
    );
  }

  private headers(res: Response): void {
    res.set('Cache-Control', 'no-store');
  }
}
