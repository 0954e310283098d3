import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../../../kernel/auth/auth.decorators';
import { AppConfig } from '../../../config/app-config';
import { AppError } from '../../../common/errors/app-error';
import { Authenticator } from '../../../kernel/authenticator';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { ConsoleAuthService } from './console-auth.service';
import { consoleBundle, renderConsoleNotFound, renderHome, renderSection, renderSignIn, Section, SECTIONS } from './console-pages.render';
import { sessionCookie } from './console-session.authenticator';
import { validate as isUuid } from 'uuid';


/** A page's signed-in session: its cookie token (for the embedded CSRF token) and the signed-in address. */
interface SignedIn {
  token: string;
  session: { address: string };
}

/**
 * The console pages at `{API origin}/console` (docs/architecture.md §19), server-rendered shells
 * filled by one bundled script that calls `/api/v1` as a `console` principal. Public routes in the
 * guard's sense: each reads the session through the API's {@link Authenticator} (one failed-auth
 * allowance) without the CSRF header (a page is a GET; it changes nothing and embeds the session's
 * CSRF token). No session → the sign-in page; an organisation the address
 * does not own (or no such organisation, or a malformed id) → 404.
 */
@ApiExcludeController()
@Controller('console')
export class ConsolePagesController {
  constructor(
    private readonly auth: ConsoleAuthService,
    private readonly orgs: OrgsService,
    private readonly config: AppConfig,
    private readonly authenticator: Authenticator,
  ) {}

  @Get()
  @Public()
  async home(@Req() req: Request, @Res() res: Response): Promise<void> {
    this.headers(res);
    const signedIn = await this.session(req);
    if (!signedIn) {
      res.type('html').send(renderSignIn({ chainId: this.config.env.CHAIN_ID }));
      return;
    }
    const { token, session } = signedIn;
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

  /**
   * The request's console session (its principal's address) and cookie token, read by the API's one
   * {@link Authenticator} under the client address's failed-auth allowance (an unknown, expired or
   * revoked cookie spends a slot; no cookie spends none), or null without a live session.
   * @throws AppError 429 rate_limited once the allowance is spent; 401 for an ambiguous cookie header.
   */
  private async session(req: Request): Promise<SignedIn | null> {
    const token = sessionCookie(req, this.auth.cookieName);
    if (!token) return null;
    try {
      const principal = await this.authenticator.session(req, { organization: false, csrf: false });
      return { token, session: { address: principal.address! } };
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthorized' && err.details?.reason === undefined) return null;
      throw err;
    }
  }

  /** {@link session}; without one, redirects to the sign-in page and answers null. */
  private async signedIn(req: Request, res: Response): Promise<SignedIn | null> {
    const signedIn = await this.session(req);
    if (!signedIn) res.redirect(303, '/console');
    return signedIn;
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
