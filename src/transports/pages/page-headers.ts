import type { RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * The strict Content-Security-Policy of every hosted page (docs/architecture.md §16), set by
 * `helmet`: nothing but the one bundled script from this origin ('self', no inline script, no
 * eval), inline styles of the shell, fetches to this origin only, forms posting to this origin
 * only, never framed.
 */
const PAGE_DIRECTIVES = {
  defaultSrc: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'unsafe-inline'"],
  connectSrc: ["'self'"],
  imgSrc: ["'self'"],
  formAction: ["'self'"],
  baseUri: ["'none'"],
  frameAncestors: ["'none'"],
};

/** Middleware of the hosted pages (pay, invoice, verify, agent signer): their CSP, nothing else. */
export const hostedPageHeaders: RequestHandler[] = [helmet.contentSecurityPolicy({ useDefaults: false, directives: PAGE_DIRECTIVES })];

/**
 * Middleware of the console pages (docs/architecture.md §19): the hosted pages' policy with
 * `data:` images, `Referrer-Policy: same-origin` and `X-Content-Type-Options: nosniff`.
 */
export const consolePageHeaders: RequestHandler[] = [
  helmet.contentSecurityPolicy({ useDefaults: false, directives: { ...PAGE_DIRECTIVES, imgSrc: ["'self'", 'data:'] } }),
  helmet.referrerPolicy({ policy: 'same-origin' }),
  helmet.xContentTypeOptions(),
];
