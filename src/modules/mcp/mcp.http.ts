import type { INestApplicationContext } from '@nestjs/common';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { NextFunction, Request, Response, Router } from 'express';
import { clientAddress, extractCredential } from '../../common/auth/auth.guard';
import { PrincipalResolver } from '../../common/auth/principal';
import { SCOPES } from '../../common/auth/scopes';
import { AppError } from '../../common/errors/app-error';
import { toAppError } from '../../common/errors/all-exceptions.filter';
import { requestIdOf } from '../../common/errors/request-id';
import { AuthFailureLimiter } from '../../common/rate-limit/auth-failure.limiter';
import { AppConfig } from '../../config/app-config';
import { AUTHORIZATION_SERVER_METADATA, authorizationServerMetadata, oauthIssuer } from '../orgs/oauth-metadata';
import { McpService } from './mcp.service';

/** Where the MCP endpoint lives on its listener. */
export const MCP_PATH = '/mcp';
const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/**
 * The MCP transport (docs/architecture.md §15): `POST /mcp`, stateless Streamable HTTP (a new
 * server and transport per request, JSON responses), authenticated like REST (`X-Api-Key` or
 * `Authorization: Bearer` with any of the three credentials). Without a valid credential: 401 in
 * our error body with `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728), whose document
 * names our client-credentials `/oauth/token` through RFC 8414 metadata; failed authentication
 * spends the client address's allowance as on REST (429 once spent). GET and DELETE answer
 * 405 (no sessions, no server-sent stream).
 */
export function mcpRouter(app: INestApplicationContext): Router {
  const config = app.get(AppConfig).env;
  const principals = app.get(PrincipalResolver);
  const mcp = app.get(McpService);
  const limiter = app.get(AuthFailureLimiter);
  const mcpBase = config.MCP_BASE_URL.replace(/\/$/, '');
  const apiBase = config.API_BASE_URL.replace(/\/$/, '');
  const resourceMetadataUrl = `${mcpBase}${RESOURCE_METADATA_PATH}${MCP_PATH}`;
  const scopes = [...SCOPES];
  const router = express.Router();

  const fail = (req: Request, res: Response, err: unknown) => {
    const e = toAppError(err);
    for (const [name, value] of Object.entries(e.headers)) res.setHeader(name, value);
    if (e.code === 'unauthorized') res.setHeader('WWW-Authenticate', `Bearer resource_metadata="${resourceMetadataUrl}"`);
    res.status(e.status).json({ error: e.message, code: e.code, requestId: requestIdOf(req), ...(e.details !== undefined ? { details: e.details } : {}) });
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
      // The REST guard's order: a slot of the address's failed-authentication allowance first.
      const attempt = await limiter.admit(clientAddress(req));
      let principal;
      try {
        const secret = extractCredential(req);
        if (!secret) throw new AppError('unauthorized', 'Missing credential: send X-Api-Key or Authorization: Bearer');
        principal = await principals.resolve(secret);
      } catch (err) {
        await attempt.settle(err instanceof AppError && err.code === 'unauthorized');
        throw err;
      }
      if (!principal) {
        await attempt.settle(true);
        throw new AppError('unauthorized', 'Invalid or expired credential');
      }
      void attempt.settle(false).catch(() => undefined);
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
