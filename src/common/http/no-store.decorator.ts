import { Header } from '@nestjs/common';

/**
 * `Cache-Control: no-store` (RFC 9111 §5.2.2.5) on a route whose response carries a secret (an API
 * key, agent key, OAuth client secret or access token, webhook secret; issue 28, docs/api.md
 * "Caching"): no browser, proxy or CDN may keep it. RFC 6749 §5.1 asks the same of token responses.
 */
export const NoStore = () => Header('Cache-Control', 'no-store');
