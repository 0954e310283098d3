import type { INestApplicationContext } from '@nestjs/common';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { NextFunction, Request, Response, Router } from 'express';
import { SCOPES } from '../../kernel/auth/scopes';
import { AppError } from '../../common/errors/app-error';
import { toAppError } from '../../common/errors/all-exceptions.filter';
import { requestIdOf } from '../../common/errors/request-id';
import { AppConfig } from '../../config/app-config';
import { AUTHORIZATION_SERVER_METADATA, authorizationServerMetadata, oauthIssuer } from '../../modules/orgs/oauth-metadata';
import { Authenticator, clientAddress } from '../../kernel/authenticator';
import { RateLimiter } from '../../kernel/rate-limit/rate-limiter';
import { McpService } from './mcp.service';
import { errorBody } from '../../common/errors/error-body';

/** Where the MCP endpoint lives on its listener. */
export const MCP_PATH = '/mcp';
const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/**
 * The MCP transport (docs/architecture.md §15): `POST /mcp`, stateless Streamable HTTP (a new
 * server and transport per request, JSON responses), authenticated like REST (`X-Api-Key` or
 * `Authorization: Bearer` with any of the three credentials). Without a valid credential: 401 in
 * our error body with `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728), whose document
 * names our client-credentials `/oauth/token` through RFC 8414 metadata. Authentication is the
 * kernel's one {@link Authenticator} (failed attempts spend the client address's allowance, 429
 * once spent) and every request counts toward the credential's rate limit as a REST request does
 * (HTTP 429 rate_limited with Retry-After past RATE_LIMIT_PER_MINUTE, DESIGN §17). GET and DELETE
 * answer 405 (no sessions, no server-sent stream).
 */
export function mcpRouter(app: INestApplicationContext): Router {
  const config = app.get(AppConfig).env;
  const authenticator = app.get(Authenticator);
  const rateLimit = app.get(RateLimiter);
  const mcp = app.get(McpService);
  const mcpBase = config.MCP_BASE_URL.replace(/\/$/, '');
  const apiBase = config.API_BASE_URL.replace(/\/$/, '');
  const resourceMetadataUrl = `${mcpBase}${RESOURCE_METADATA_PATH}${MCP_PATH}`;
  const scopes = [...SCOPES];
  const router = express.Router();

  const fail = (req: Request, res: Response, err: unknown) => {
    const e = toAppError(err);
    for (const [name, value] of Object.entries(e.headers)) res.setHeader(name, value);
    if (e.code === 'unauthorized') res.setHeader('WWW-Authenticate', `Bearer resource_metadata="${resourceMetadataUrl}"`);
    res.status(e.status).json(errorBody(e, requestIdOf(req)));
  };

  const protectedResource = {
    resource: `${mcpBase}${MCP_PATH}`,
    authorization_servers: [oauthIssuer(config)],
    scopes_supported: scopes,
    bearer_methods_supported: ['header'],
    resource_name: 'Payments control plane (MCP)',
    resource_documentation: `${apiBase}/docs`,
  };
  router.get([`${RESOURCE_METADATA_PATH}${MCP_PATH}`, RESOURCE_METADATA_PATH], (_req, res) => {
    res.json(protectedResource);
  });
  // The MCP listener's copy of the authorization server metadata; the api listener serves it where
  // RFC 8414 puts it for the issuer (authorizationServerMetadataRouter).
  const authorizationServer = authorizationServerMetadata(config);
  router.get(AUTHORIZATION_SERVER_METADATA, (_req, res) => {
    res.json(authorizationServer);
  });

  router.post(MCP_PATH, (req: Request, res: Response, next: NextFunction) => {
    void (async () => {
      // The kernel's entry steps, as on REST: the one authenticator (with the address's allowance of
      // failed authentications), then the credential's rate limit, one count per request.
      const principal = await authenticator.authenticate(req);
      for (const [name, value] of Object.entries(await rateLimit.consume(principal, clientAddress(req)))) res.setHeader(name, value);
      // Tool results may carry a secret (svc_webhook_endpoint_put's whsec_): no MCP answer is stored (issue 28).
      res.setHeader('Cache-Control', 'no-store');
      const server = mcp.serverFor(principal, requestIdOf(req));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    })().catch((err: unknown) => (res.headersSent ? next(err) : fail(req, res, err)));
  });
  router.all(MCP_PATH, (req, res) => {
    res.setHeader('Allow', 'POST');
    fail(req, res, new AppError('invalid_request', 'The MCP endpoint is stateless: use POST', { reason: 'method_not_allowed' }, 405));
  });
  return router;
}
