import { Injectable } from '@nestjs/common';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { AppConfig } from '../../config/app-config';
import { WebhookErrors } from './webhooks.errors';

/** Why an address is not a public unicast destination; null from {@link classifyAddress} means public. */
export type AddressClass =
  | 'unspecified'
  | 'this_network'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link_local'
  | 'unique_local'
  | 'multicast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved'
  | 'invalid';

const V4_BLOCKS: Array<[string, number, AddressClass]> = [
  ['0.0.0.0', 8, 'this_network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link_local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function parseV4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255)) return null;
  return parts.reduce((acc, p) => acc * 256 + Number(p), 0);
}

function classifyV4(n: number): AddressClass | null {
  for (const [base, bits, cls] of V4_BLOCKS) {
    const size = 2 ** (32 - bits);
    const start = parseV4(base)!;
    if (n >= start && n < start + size) return cls;
  }
  return null;
}

function parseV6(text: string): bigint | null {
  let s = text.toLowerCase();
  if (s.includes('.')) {
    const cut = s.lastIndexOf(':');
    const v4 = parseV4(s.slice(cut + 1));
    if (v4 === null) return null;
    s = `${s.slice(0, cut + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  if (fill < 0 || (halves.length === 1 && head.length !== 8)) return null;
  const groups = [...head, ...Array<string>(fill).fill('0'), ...tail];
  if (groups.length !== 8 || !groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

const inV6 = (n: bigint, prefix: string, bits: number) => n >> BigInt(128 - bits) === parseV6(prefix)! >> BigInt(128 - bits);
const low32 = (n: bigint) => Number(n & 0xffffffffn);

function classifyV6(n: bigint): AddressClass | null {
  if (n === 0n) return 'unspecified';
  if (n === 1n) return 'loopback';
  if (inV6(n, '::ffff:0:0', 96)) return classifyV4(low32(n));
  if (inV6(n, '64:ff9b::', 96)) return classifyV4(low32(n));
  if (inV6(n, '2002::', 16)) return classifyV4(Number((n >> 80n) & 0xffffffffn));
  if (inV6(n, '::', 96)) return 'reserved';
  if (inV6(n, 'fc00::', 7)) return 'unique_local';
  if (inV6(n, 'fe80::', 10)) return 'link_local';
  if (inV6(n, 'fec0::', 10)) return 'private';
  if (inV6(n, 'ff00::', 8)) return 'multicast';
  if (inV6(n, '2001:db8::', 32)) return 'documentation';
  if (inV6(n, '100::', 64) || inV6(n, '64:ff9b:1::', 48)) return 'reserved';
  if (!inV6(n, '2000::', 3)) return 'reserved';
  return null;
}

/**
 * Classifies an IP address literal for the SSRF guard (docs/architecture.md §8; docs/decisions.md): loopback
 * (127/8, ::1), RFC 1918, link-local and cloud metadata (169.254/16, fe80::/10), CGNAT
 * (100.64/10), 0/8, unique-local (fc00::/7, incl. fd00:ec2::254), multicast, documentation and
 * reserved ranges, and IPv6 outside 2000::/3. IPv4 embedded in IPv6 (mapped ::ffff:a.b.c.d,
 * NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by its IPv4 address. A bracketed literal or a
 * zone id (`fe80::1%eth0`) is accepted.
 * @returns null for a public unicast address, otherwise the class that makes it non-public
 *   (`invalid` for text that is not an IP address).
 */
export function classifyAddress(address: string): AddressClass | null {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0];
  const family = isIP(bare);
  if (family === 4) return classifyV4(parseV4(bare)!);
  if (family === 6) {
    const n = parseV6(bare);
    return n === null ? 'invalid' : classifyV6(n);
  }
  return 'invalid';
}

/** Why a webhook URL is refused (docs/architecture.md §8). */
export type UrlRefusal = 'invalid_url' | 'scheme' | 'userinfo' | 'private_address' | 'unresolvable';

/** A webhook URL or its resolved address failed the SSRF policy; `reason` is the API's `details.reason`. */
export class UrlRefusedError extends Error {
  constructor(
    readonly reason: UrlRefusal,
    message: string,
    readonly addressClass?: AddressClass,
  ) {
    super(message);
    this.name = 'UrlRefusedError';
  }
}

/** A resolved address of a host name (`family` 4 or 6). */
export type ResolvedAddress = LookupAddress;

/**
 * Port for host name resolution (docs/architecture.md, Conventions 4: a second implementation is real — tests make a name
 * resolve to a chosen address to prove the connect-time check).
 */
export abstract class HostResolver {
  /** @returns every A/AAAA address of `hostname` (at least one). @throws Error when it does not resolve. */
  abstract resolve(hostname: string): Promise<ResolvedAddress[]>;
}

/** The system resolver (`getaddrinfo`, so /etc/hosts counts, as it does for the connection itself). */
@Injectable()
export class DnsHostResolver extends HostResolver {
  resolve(hostname: string): Promise<ResolvedAddress[]> {
    return dnsLookup(hostname, { all: true, order: 'verbatim' });
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * The SSRF guard of docs/architecture.md §8 (facts: docs/decisions.md): https only unless
 * `WEBHOOK_ALLOW_HTTP`; no userinfo; every A/AAAA address must be public unless
 * `WEBHOOK_ALLOW_PRIVATE`. Applied at registration ({@link assertAllowed}) and again at
 * connection time ({@link lookup}, used by the delivery agent, so a name that re-resolves to a
 * private address — DNS rebinding — is refused and the socket connects to the vetted address).
 */
@Injectable()
export class WebhookUrlService {
  constructor(
    private readonly config: AppConfig,
    private readonly resolver: HostResolver,
  ) {}

  private get allowPrivate(): boolean {
    return this.config.env.WEBHOOK_ALLOW_PRIVATE;
  }

  /**
   * Parses `raw` and applies the checks that need no DNS: scheme, userinfo, and the address
   * class of an IP-literal host.
   * @throws UrlRefusedError (invalid_url, scheme, userinfo, private_address).
   */
  checkStatic(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new UrlRefusedError('invalid_url', 'must be an absolute URL');
    }
    const httpOk = this.config.env.WEBHOOK_ALLOW_HTTP;
    if (url.protocol !== 'https:' && !(httpOk && url.protocol === 'http:')) {
      throw new UrlRefusedError('scheme', httpOk ? 'must use https or http' : 'must use https');
    }
    if (url.username || url.password) throw new UrlRefusedError('userinfo', 'must not contain a user name or password');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!host) throw new UrlRefusedError('invalid_url', 'must have a host');
    if (isIP(host) && !this.allowPrivate) {
      const cls = classifyAddress(host);
      if (cls) throw new UrlRefusedError('private_address', `must not point to a private or reserved address (${cls})`, cls);
    }
    return url;
  }

  /**
   * The full registration check: {@link checkStatic}, then resolves the host and refuses it if
   * any address is non-public (unless WEBHOOK_ALLOW_PRIVATE).
   * @throws UrlRefusedError with the reason the API reports in `details.reason`.
   */
  async assertAllowed(raw: string): Promise<URL> {
    const url = this.checkStatic(raw);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (this.allowPrivate || isIP(host)) return url;
    this.vet(host, await this.resolveOrRefuse(host));
    return url;
  }

  /**
   * The registration check as the API reports it (docs/architecture.md §8; PUT /webhook-endpoints and a
   * checkout session's `webhookUrl`).
   * @throws AppError invalid_request with `details.param = param` and `details.reason`
   *   (`private_address`, `scheme`, `userinfo`, `unresolvable`, `invalid_url`).
   */
  async assertRegistrable(raw: string, param: string): Promise<void> {
    try {
      await this.assertAllowed(raw);
    } catch (err) {
      if (err instanceof UrlRefusedError) throw WebhookErrors.urlRefused(param, err);
      throw err;
    }
  }

  /**
   * A `lookup` for `net.connect`/`tls.connect` (undici `Agent({connect: {lookup}})`): resolves,
   * refuses the connection when any address is non-public, and hands back only vetted
   * addresses, so the socket connects to what was checked while Host and SNI keep the name.
   */
  readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    this.resolveOrRefuse(hostname)
      .then((addresses) => {
        if (!this.allowPrivate) this.vet(hostname, addresses);
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (wanted.length === 0) throw new UrlRefusedError('unresolvable', `${hostname} has no address of the requested family`);
        if (options.all) callback(null, wanted);
        else callback(null, wanted[0].address, wanted[0].family);
      })
      .catch((err: Error) => callback(Object.assign(err, { code: (err as NodeJS.ErrnoException).code ?? 'EWEBHOOKREFUSED' }), '', 0));
  };

  /**
   * Whether {@link assertAllowed} would resolve `raw`'s host (a name, not an IP literal, and
   * private addresses refused): only then does the check make a network call.
   */
  needsResolution(raw: string): boolean {
    if (this.allowPrivate) return false;
    try {
      return !isIP(new URL(raw).hostname.replace(/^\[|\]$/g, ''));
    } catch {
      return false;
    }
  }

  /** Resolves within WEBHOOK_DNS_TIMEOUT_MS (getaddrinfo cannot be cancelled; we stop waiting for it). */
  private async resolveOrRefuse(host: string): Promise<ResolvedAddress[]> {
    const ms = this.config.env.WEBHOOK_DNS_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UrlRefusedError('unresolvable', `host ${host} did not resolve within ${ms} ms`)), ms);
    });
    try {
      const addresses = await Promise.race([this.resolver.resolve(host), timeout]);
      if (addresses.length === 0) throw new Error('no addresses');
      return addresses;
    } catch (err) {
      if (err instanceof UrlRefusedError) throw err;
      throw new UrlRefusedError('unresolvable', `host ${host} does not resolve`);
    } finally {
      clearTimeout(timer);
    }
  }

  private vet(host: string, addresses: ResolvedAddress[]): void {
    for (const a of addresses) {
      const cls = classifyAddress(a.address);
      if (cls) throw new UrlRefusedError('private_address', `host ${host} resolves to a private or reserved address (${cls})`, cls);
    }
  }
}
