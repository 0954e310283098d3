import { Injectable } from '@nestjs/common';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppConfig } from '../../config/app-config';
import { WebhookErrors } from './webhooks.errors';

/**
 * Why an address is not a public unicast destination; null from {@link classifyAddress} means public.
 * The special-purpose range names of ipaddr.js (RFC 6890 and the RFCs it lists) in snake case
 * (`link_local`, `carrier_grade_nat`, `unique_local`, `teredo`, …), `reserved` for IPv6 outside
 * 2000::/3, and `invalid` for text that is not an IP literal. It reaches API callers as
 * `details.addressClass`.
 */
export type AddressClass = string;

/** 2000::/3, where IPv6 global unicast lives (RFC 4291 §2.4); anything else unlisted is reserved. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * The IPv4 address an IPv6 address carries, judged as IPv4: mapped (::ffff:a.b.c.d, RFC 4291),
 * NAT64 (64:ff9b::/96, RFC 6052) and 6to4 (2002:AABB:CCDD::/48, RFC 3056); null for any other.
 */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const range = ip.range();
  const p = ip.parts;
  if (range === 'ipv4Mapped') return ip.toIPv4Address();
  if (range === 'rfc6052' && ip.match(ipaddr.parseCIDR('64:ff9b::/96'))) return ipaddr.fromByteArray([p[6] >> 8, p[6] & 0xff, p[7] >> 8, p[7] & 0xff]) as ipaddr.IPv4;
  if (range === '6to4') return ipaddr.fromByteArray([p[1] >> 8, p[1] & 0xff, p[2] >> 8, p[2] & 0xff]) as ipaddr.IPv4;
  return null;
}

/**
 * Classifies an IP address literal for the SSRF guard (docs/architecture.md §8; docs/decisions.md):
 * ipaddr.js's `range()` names every special-purpose block (loopback, RFC 1918, link-local and cloud
 * metadata 169.254/16, CGNAT, 0/8, unique-local incl. fd00:ec2::254, multicast, documentation,
 * benchmarking, reserved, teredo, …); only `unicast` is public, and for IPv6 only inside 2000::/3.
 * IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is judged by its IPv4 address. A bracketed literal or
 * a zone id (`fe80::1%eth0`) is accepted. Only strict literals count (Node's `isIP`: no `127.1` or
 * hex octets).
 * @returns null for a public unicast address, otherwise the class that makes it non-public
 *   (`invalid` for text that is not an IP address).
 */
export function classifyAddress(address: string): AddressClass | null {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0];
  if (isIP(bare) === 0) return 'invalid';
  let ip = ipaddr.parse(bare);
  if (ip.kind() === 'ipv6') ip = embeddedIPv4(ip as ipaddr.IPv6) ?? ip;
  const range = ip.range();
  if (range !== 'unicast') return range.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return ip.kind() === 'ipv4' || (ip as ipaddr.IPv6).match(GLOBAL_UNICAST) ? null : 'reserved';
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
