import express, { Router } from 'express';
import { SCOPES } from '../../kernel/auth/scopes';
import type { EnvSchema as Env } from '../../config/env.schema';

/** The RFC 8414 §3 well-known suffix under which an authorization server's metadata is served. */
export const AUTHORIZATION_SERVER_METADATA = '/.well-known/oauth-authorization-server';

/** Our OAuth issuer: API_BASE_URL without a trailing slash (the protected-resource metadata names it, RFC 9728). */
export function oauthIssuer(env: Pick<Env, 'API_BASE_URL'>): string {
  return env.API_BASE_URL.replace(/\/$/, '');
}

/**
 * The authorization server metadata (RFC 8414 §2) of our client-credentials token endpoint
 * (`POST /oauth/token`, docs/architecture.md §3, §15): the same document on every listener.
 */
export function authorizationServerMetadata(env: Pick<Env, 'API_BASE_URL'>): Record<string, unknown> {
  const issuer = oauthIssuer(env);
  return {
    issuer,
    token_endpoint: `${issuer}/oauth/token`,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_post'],
    response_types_supported: [],
    scopes_supported: [...SCOPES],
    service_documentation: `${issuer}/docs`,
  };
}

/**
 * Serves {@link authorizationServerMetadata} where RFC 8414 §3 puts it for our issuer:
 * `{origin}/.well-known/oauth-authorization-server{issuer path}` (docs/architecture.md §17). With
 * an issuer without a path that is the bare well-known path.
 */
export function authorizationServerMetadataRouter(env: Pick<Env, 'API_BASE_URL'>): Router {
  const router = express.Router();
  const issuerPath = new URL(oauthIssuer(env)).pathname.replace(/\/$/, '');
  const document = authorizationServerMetadata(env);
  router.get(`${AUTHORIZATION_SERVER_METADATA}${issuerPath}`, (_req, res) => {
    res.json(document);
  });
  return router;
}
