import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ConsoleSessionRoute, CredentialExchange, CurrentPrincipal, Public } from '../../../kernel/auth/auth.decorators';
import { clientAddress } from '../../../kernel/auth/auth.guard';
import type { Principal } from '../../../kernel/auth/principal';
import { ApiStandardErrors } from '../../../common/http/api-errors.decorator';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { CREATE_ORGANIZATION, OrgsOperations } from '../../../modules/orgs/orgs.operations';
import { Runs, runWork } from '../../../kernel/http';
import { ConsoleAuthService, SESSION_TTL_MS } from './console-auth.service';
import { sessionCookie } from './console-session.authenticator';
import { ConsoleNonceDto, ConsoleOrganizationDto, ConsoleSessionDto, CreateOrganizationDto, SignedOutDto, SignInDto } from './dto/console.dto';

/**
 * The console's session routes on the api port (docs/architecture.md §19): SIWE nonce and sign-in
 * (public, under the client address's failed-auth allowance and the signed address's own), then,
 * with the session cookie and its CSRF header, the session, sign-out, and the organisations the
 * address owns (self-serve creation, the orgs domain's `create-organization` operation). Organisation work goes through `/api/v1` as a `console`
 * principal with `X-Console-Organization`.
 */
@ApiTags('console')
@Controller('console/api')
export class ConsoleSessionController {
  constructor(
    private readonly auth: ConsoleAuthService,
    private readonly orgs: OrgsService,
    private readonly orgOps: OrgsOperations,
  ) {}

  @Get('nonce')
  @Public()
  @ApiOperation({ summary: 'A single-use SIWE nonce (5 minutes) and the domain, uri and chain id the message must name' })
  @ApiOkResponse({ type: ConsoleNonceDto })
  @ApiStandardErrors()
  nonce(@Res({ passthrough: true }) res: Response): Promise<ConsoleNonceDto> {
    res.set('Cache-Control', 'no-store');
    return this.auth.nonce();
  }

  @Post('sign-in')
  @CredentialExchange()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Sign-In with Ethereum (EIP-4361): opens a 12 h session',
    description: 'Sets the HttpOnly, SameSite=Strict session cookie; answers the CSRF token to send as X-CSRF-Token. 401 with details.reason on a refused message.',
  })
  @ApiOkResponse({ type: ConsoleSessionDto })
  @ApiStandardErrors()
  async signIn(@Body() body: SignInDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<ConsoleSessionDto> {
    const session = await this.auth.signIn(body.message, body.signature, clientAddress(req));
    res.cookie(this.auth.cookieName, session.token, {
      httpOnly: true,
      sameSite: 'strict',
      secure: !this.auth.insecureCookies,
      path: '/',
      maxAge: SESSION_TTL_MS,
    });
    res.set('Cache-Control', 'no-store');
    return { address: session.address, expiresAt: session.expiresAt.toISOString(), csrfToken: session.csrfToken, organizations: await this.orgs.ownedOrganizations(session.address) };
  }

  @Get('session')
  @ConsoleSessionRoute()
  @ApiOperation({ summary: 'The signed-in address, its session expiry and the organisations it owns' })
  @ApiOkResponse({ type: ConsoleSessionDto })
  @ApiStandardErrors()
  async session(@CurrentPrincipal() p: Principal, @Req() req: Request): Promise<ConsoleSessionDto> {
    return {
      address: p.address!,
      expiresAt: new Date(p.expiresAt!).toISOString(),
      csrfToken: ConsoleAuthService.csrfToken(sessionCookie(req, this.auth.cookieName)!),
      organizations: await this.orgs.ownedOrganizations(p.address!),
    };
  }

  @Post('sign-out')
  @ConsoleSessionRoute()
  @HttpCode(200)
  @ApiOperation({ summary: 'Revokes the session at once and clears the cookie' })
  @ApiOkResponse({ type: SignedOutDto })
  @ApiStandardErrors()
  async signOut(@CurrentPrincipal() p: Principal, @Res({ passthrough: true }) res: Response): Promise<SignedOutDto> {
    await this.auth.signOut(p.credentialId);
    res.clearCookie(this.auth.cookieName, { httpOnly: true, sameSite: 'strict', secure: !this.auth.insecureCookies, path: '/' });
    return { address: p.address!, signedOut: true };
  }

  @Post('organizations')
  @Runs(CREATE_ORGANIZATION)
  @HttpCode(200)
  @ApiOperation({
    summary: 'Self-serve: create an organisation owned by the signed-in address (at most 5 per address)',
    description: 'The payout address defaults to the signed-in address; another address needs its EIP-712 PayoutAddress signature in payoutProof (EIP-1271 for a contract wallet), else 403 payout_address_proof_required. No Idempotency-Key: the handle is unique, so a retry answers 400 handle taken.',
  })
  @ApiOkResponse({ type: ConsoleOrganizationDto })
  @ApiStandardErrors()
  createOrganization(@CurrentPrincipal() p: Principal, @Body() body: CreateOrganizationDto): Promise<ConsoleOrganizationDto> {
    return runWork(this.orgOps.createOrganization.work({ principal: p, params: {} }, body));
  }
}
