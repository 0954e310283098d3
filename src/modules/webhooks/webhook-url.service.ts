import { Injectable } from '@nestjs/common';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
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

/** IPv4 blocks that are not public unicast destinations (RFC 6890 and the RFCs it lists). */
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

/** IPv6 blocks, most specific first (RFC 4291, RFC 6890). */
const V6_BLOCKS: Array<[string, number, AddressClass]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'reserved'],
  ['fc00::', 7, 'unique_local'],
  ['fe80::', 10, 'link_local'],
  ['fec0::', 10, 'private'],
  ['ff00::', 8, 'multicast'],
  ['2001:db8::', 32, 'documentation'],
  ['100::', 64, 'reserved'],
  ['64:ff9b:1::', 48, 'reserved'],
];

/** The IPv4 block as two hex words, to place it inside an IPv6 prefix (NAT64 RFC 6052, 6to4 RFC 3056). */
function hexWords(v4: string): [string, string] {
  const [a, b, c, d] = v4.split('.').map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}

/**
 * One Node `net.BlockList` per listed block, in the order they are checked. An IPv4 rule also
 * matches the IPv4-mapped IPv6 form (::ffff:a.b.c.d); each IPv4 block is listed again inside the
 * NAT64 (64:ff9b::/96) and 6to4 (2002::/16) prefixes, so an embedded address is judged as IPv4.
 */
const BLOCKS: Array<[BlockList, AddressClass]> = [
  ...V4_BLOCKS.map(([address, bits, cls]): [BlockList, AddressClass] => {
    const list = new BlockList();
    const [high, low] = hexWords(address);
    list.addSubnet(address, bits, 'ipv4');
    list.addSubnet(`64:ff9b::${high}:${low}`, 96 + bits, 'ipv6');
    list.addSubnet(`2002:${high}:${low}::`, 16 + bits, 'ipv6');
    return [list, cls];
  }),
  ...V6_BLOCKS.map(([address, bits, cls]): [BlockList, AddressClass] => {
    const list = new BlockList();
    list.addSubnet(address, bits, 'ipv6');
    return [list, cls];
  }),
];

/** Prefixes whose unlisted addresses are public IPv4 destinations (mapped, NAT64), though outside 2000::/3. */
const EMBEDDED_V4 = new BlockList();
EMBEDDED_V4.addSubnet('::ffff:0:0', 96, 'ipv6');
EMBEDDED_V4.addSubnet('64:ff9b::', 96, 'ipv6');
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');

/**
 * Classifies an IP address literal for the SSRF guard (docs/architecture.md §8; docs/decisions.md): loopback
 * (127/8, ::1), RFC 1918, link-local and cloud metadata (169.254/16, fe80::/10), CGNAT
 * (100.64/10), 0/8, unique-local (fc00::/7, incl. fd00:ec2::254), multicast, documentation and
 * reserved ranges, and IPv6 outside 2000::/3. IPv4 embedded in IPv6 (mapped ::ffff:a.b.c.d,
 * NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by its IPv4 address. A bracketed literal or a
 * zone id (`fe80::1%eth0`) is accepted. Only strict literals count (Node's `isIP`: no `127.1`
 * or hex octets); parsing and matching are Node's `net.BlockList`.
 * @returns null for a public unicast address, otherwise the class that makes it non-public
 *   (`invalid` for text that is not an IP address).
 */
export function classifyAddress(address: string): AddressClass | null {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0];
  const family = isIP(bare);
  if (family === 0) return 'invalid';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const listed = BLOCKS.find(([list]) => list.check(bare, type));
  if (listed) return listed[1];
  if (family === 4 || EMBEDDED_V4.check(bare, 'ipv6') || GLOBAL_UNICAST.check(bare, 'ipv6')) return null;
  return 'reserved';
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
