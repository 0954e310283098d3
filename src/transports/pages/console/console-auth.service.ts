import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { getAddress, verifyMessage } from 'ethers';
import { SiweMessage } from 'siwe';
import { v7 as uuidv7 } from 'uuid';
import { hashSecret, randomBase62 } from '../../../kernel/auth/secrets';
import { AppError } from '../../../common/errors/app-error';
import { AuthFailureLimiter } from '../../../kernel/rate-limit/auth-failure.limiter';
import { AppConfig } from '../../../config/app-config';
import { ConsoleRepository, ConsoleSessionRow } from './console.repository';

/** A SIWE nonce lives 5 minutes and is used once (docs/architecture.md §19). */
export const NONCE_TTL_MS = 5 * 60_000;
/** A console session lives 12 hours (docs/architecture.md §19). */
export const SESSION_TTL_MS = 12 * 3600_000;
/** The session cookie's name on http localhost (the demo); its value is the session token (base62). */
export const SESSION_COOKIE = 'pcp_console';
/** The session cookie's name over HTTPS: `__Host-` (RFC 6265bis §4.1.3.2: Secure, Path=/, no Domain, so no sibling host can set it). */
export const HOST_SESSION_COOKIE = '__Host-pcp_console';
/** The header that carries the session's CSRF token on every console API request. */
export const CSRF_HEADER = 'x-csrf-token';
/** The header naming the organisation a console request acts for. */
export const ORGANIZATION_HEADER = 'x-console-organization';
/** The header naming the agent a console request acts for, when the address owns the agent but not its organisation. */
export const AGENT_HEADER = 'x-console-agent';

/** Whether `signature` (EIP-191) over the SIWE message recovers to the address it names. CPU only. */
function signedBy(siwe: SiweMessage, signature: string): boolean {
  try {
    return getAddress(verifyMessage(siwe.prepareMessage(), signature)) === getAddress(siwe.address);
  } catch {
    return false;
  }
}

/** A new session: the cookie token and the CSRF token (both shown to this client once). */
export interface IssuedSession {
  id: string;
  token: string;
  csrfToken: string;
  address: string;
  expiresAt: Date;
}

/**
 * Sign-In with Ethereum for the console (EIP-4361, docs/architecture.md §19), verified with the
 * `siwe` package: the message must name this console (domain = host of API_BASE_URL, URI =
 * `{API_BASE_URL}/console`), this chain, an expiration time, and a nonce this server issued in the
 * last 5 minutes and has not seen used; the nonce is consumed in one statement, so a replayed
 * message or nonce is refused. A session is stored server-side (token and CSRF digests only).
 */
@Injectable()
export class ConsoleAuthService {
  constructor(
    private readonly repo: ConsoleRepository,
    private readonly config: AppConfig,
    private readonly limiter: AuthFailureLimiter,
  ) {}

  /** The SIWE `domain` (RFC 3986 authority of the api origin) and `uri` of the console. */
  get siweTarget(): { domain: string; uri: string; chainId: number } {
    const base = new URL(this.config.env.API_BASE_URL);
    return { domain: base.host, uri: `${base.origin}/console`, chainId: this.config.env.CHAIN_ID };
  }

  /** Whether cookies may go without `Secure`: only for an http api origin on localhost (the demo and tests). */
  get insecureCookies(): boolean {
    const base = new URL(this.config.env.API_BASE_URL);
    return base.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(base.hostname);
  }

  /** The session cookie's name: `__Host-pcp_console`, except on http localhost (`pcp_console`). */
  get cookieName(): string {
    return this.insecureCookies ? SESSION_COOKIE : HOST_SESSION_COOKIE;
  }

  /** A fresh single-use nonce (EIP-4361: ≥ 8 alphanumerics; here 24 base62) valid 5 minutes. */
  async nonce(): Promise<{ nonce: string; expiresAt: string } & { domain: string; uri: string; chainId: number }> {
    const nonce = randomBase62(24);
    const expiresAt = new Date(Date.now() + NONCE_TTL_MS);
    await this.repo.insertNonce(nonce, expiresAt);
    return { nonce, expiresAt: expiresAt.toISOString(), ...this.siweTarget };
  }

  /**
   * Verifies a signed SIWE message and opens a 12 h session for its address.
   * @throws AppError unauthorized (`details.reason`: `malformed_message`, `wrong_domain`, `wrong_uri`,
   *   `wrong_chain`, `expiration_required`, `expired`, `not_yet_valid`, `bad_signature`, `nonce_invalid`
   *   (unknown, expired or already used)); 429 rate_limited once the address in the message has
   *   spent its allowance of failed sign-ins — only refusals of messages it signed count there; every
   *   refusal counts against the client address (the route's allowance).
   */
  async signIn(message: string, signature: string, clientAddress: string): Promise<IssuedSession> {
    const refuse = (reason: string, text: string) => new AppError('unauthorized', `Sign-in refused: ${text}`, { reason });
    let siwe: SiweMessage;
    try {
      siwe = new SiweMessage(message);
    } catch {
      throw refuse('malformed_message', 'not an EIP-4361 message');
    }
    // A refusal counts against the named address only when the signature is that address's
    // (issue 28): else anyone could spend its allowance with forged messages. Every refusal counts
    // against the client address (the route's allowance, AuthGuard).
    if (!signedBy(siwe, signature)) throw refuse('bad_signature', 'the signature does not match the message');
    const attempt = await this.limiter.admit(`siwe:${siwe.address.toLowerCase()}`);
    try {
      const session = await this.verifyAndOpen(siwe, signature, clientAddress, refuse);
      void attempt.settle(false).catch(() => undefined);
      return session;
    } catch (err) {
      await attempt.settle(err instanceof AppError && err.code === 'unauthorized');
      throw err;
    }
  }

  private async verifyAndOpen(siwe: SiweMessage, signature: string, clientAddress: string, refuse: (reason: string, text: string) => AppError): Promise<IssuedSession> {
    const target = this.siweTarget;
    if (siwe.domain !== target.domain) throw refuse('wrong_domain', `the message must be for ${target.domain}`);
    if (siwe.uri !== target.uri) throw refuse('wrong_uri', `the message must name ${target.uri}`);
    if (siwe.chainId !== target.chainId) throw refuse('wrong_chain', `the message must name chain ${target.chainId}`);
    if (!siwe.expirationTime) throw refuse('expiration_required', 'the message needs an expiration time');
    const result = await siwe.verify({ signature, domain: target.domain, nonce: siwe.nonce }, { suppressExceptions: true });
    if (!result.success) {
      const type = String(result.error?.type ?? '');
      if (/expired/i.test(type)) throw refuse('expired', 'the message has expired');
      if (/not.?before|not yet/i.test(type)) throw refuse('not_yet_valid', 'the message is not valid yet');
      throw refuse('bad_signature', 'the signature does not match the message');
    }
    if (!(await this.repo.consumeNonce(siwe.nonce))) throw refuse('nonce_invalid', 'the nonce is unknown, expired or already used');
    const token = randomBase62(32);
    const session = {
      id: uuidv7(),
      tokenHash: hashSecret(token),
      address: getAddress(siwe.address),
      chainId: siwe.chainId,
      clientAddress,
      expiresAt: new Date(Date.now() + SESSION_TTL_MS),
    };
    await this.repo.insertSession(session);
    return { id: session.id, token, csrfToken: ConsoleAuthService.csrfToken(token), address: session.address, expiresAt: session.expiresAt };
  }

  /** The live session of a cookie token, or null (unknown, expired, revoked, malformed). */
  session(token: string | undefined): Promise<ConsoleSessionRow | null> {
    if (!token || !/^[0-9A-Za-z]{20,64}$/.test(token)) return Promise.resolve(null);
    return this.repo.findLiveSession(hashSecret(token));
  }

  /**
   * The session's CSRF token (OWASP synchronizer token, session-bound): SHA-256 over a label and
   * the session token, hex. Pages embed it, the client sends it in `X-CSRF-Token`; a cross-site
   * request cannot read it (the cookie is HttpOnly, responses are same-origin), and it reveals
   * nothing of the token.
   */
  static csrfToken(sessionToken: string): string {
    return createHash('sha256').update(`pcp-console-csrf\0${sessionToken}`).digest('hex');
  }

  /** Whether `presented` is the session's CSRF token (constant-time). */
  static csrfMatches(sessionToken: string, presented: string | undefined): boolean {
    if (!presented || !/^[0-9a-f]{64}$/.test(presented)) return false;
    return timingSafeEqual(Buffer.from(ConsoleAuthService.csrfToken(sessionToken), 'hex'), Buffer.from(presented, 'hex'));
  }

  /** Revokes the session at once: its next request gets 401. */
  signOut(sessionId: string): Promise<void> {
    return this.repo.revokeSession(sessionId);
  }
}
