import type { LookupAddress } from 'node:dns';
import { AppConfig } from '../../config/app-config';
import { AppError } from '../../common/errors/app-error';
import { classifyAddress, HostResolver, ResolvedAddress, UrlRefusedError, WebhookUrlService } from './webhook-url.service';

class FakeResolver extends HostResolver {
  constructor(private readonly table: Record<string, ResolvedAddress[]>) {
    super();
  }
  async resolve(host: string): Promise<ResolvedAddress[]> {
    const r = this.table[host];
    if (!r) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return r;
  }
}

const v4 = (address: string): LookupAddress => ({ address, family: 4 });
const v6 = (address: string): LookupAddress => ({ address, family: 6 });

function service(env: Record<string, string>, table: Record<string, ResolvedAddress[]> = {}) {
  return new WebhookUrlService(new AppConfig({ WEBHOOK_ALLOW_HTTP: 'false', WEBHOOK_ALLOW_PRIVATE: 'false', ...env }), new FakeResolver(table));
}

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.1.2', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link_local'],
    ['100.64.0.1', 'carrier_grade_nat'],
    ['100.127.255.255', 'carrier_grade_nat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['198.18.0.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fc00::1', 'unique_local'],
    ['fd00:ec2::254', 'unique_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link_local'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link_local'],
    ['2002:c0a8:0101::1', 'private'],
    // ipaddr.js reads the deprecated IPv4-compatible form as mapped: still not public.
    ['::127.0.0.1', 'loopback'],
    ['2001:db8::1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['64:ff9b:1::1', 'rfc6052'],
    ['2002:7f00:0001::1', 'loopback'],
    ['fec0::1', 'deprecated_site_local'],
    ['100::1', 'discard'],
    ['3fff::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['not-an-ip', 'invalid'],
  ])('%s is %s', (ip, cls) => {
    expect(classifyAddress(ip)).toBe(cls);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2002:0808:0808::1'])(
    '%s is public',
    (ip) => {
      expect(classifyAddress(ip)).toBeNull();
    },
  );
});

describe('WebhookUrlService', () => {
  const refusal = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      return err as UrlRefusedError;
    }
    throw new Error('expected a refusal');
  };

  it('refuses http unless WEBHOOK_ALLOW_HTTP, and userinfo always', async () => {
    const s = service({}, { 'hooks.example.com': [v4('93.184.216.34')] });
    expect((await refusal(s.assertAllowed('http://hooks.example.com/x'))).reason).toBe('scheme');
    expect((await refusal(s.assertAllowed('https://u:p@hooks.example.com/x'))).reason).toBe('userinfo');
    await expect(s.assertAllowed('https://hooks.example.com/x')).resolves.toBeInstanceOf(URL);
    await expect(service({ WEBHOOK_ALLOW_HTTP: 'true' }, { 'hooks.example.com': [v4('93.184.216.34')] }).assertAllowed('http://hooks.example.com/x')).resolves.toBeInstanceOf(URL);
  });

  it.each(['https://127.0.0.1/x', 'https://169.254.169.254/latest/meta-data', 'https://[::1]/x', 'https://[::ffff:127.0.0.1]/', 'https://2130706433/', 'https://0x7f.1/'])(
    'refuses the literal %s as private_address',
    async (url) => {
      expect((await refusal(service({}).assertAllowed(url))).reason).toBe('private_address');
    },
  );

  it('refuses a name when any of its addresses is private, and one that does not resolve', async () => {
    const s = service({}, { 'mixed.example.com': [v4('93.184.216.34'), v6('::1')], 'inner.example.com': [v4('10.0.0.5')] });
    expect((await refusal(s.assertAllowed('https://mixed.example.com/'))).addressClass).toBe('loopback');
    expect((await refusal(s.assertAllowed('https://inner.example.com/'))).reason).toBe('private_address');
    expect((await refusal(s.assertAllowed('https://nowhere.example.com/'))).reason).toBe('unresolvable');
  });

  it('allows private targets when WEBHOOK_ALLOW_PRIVATE', async () => {
    await expect(service({ WEBHOOK_ALLOW_PRIVATE: 'true' }).assertAllowed('https://127.0.0.1/x')).resolves.toBeInstanceOf(URL);
  });

  it('reports a refusal at registration as invalid_request naming the param', async () => {
    const err = (await refusal(service({}).assertRegistrable('https://127.0.0.1/x', 'webhookUrl'))) as unknown as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.status).toBe(400);
    expect(err.details).toMatchObject({ param: 'webhookUrl', reason: 'private_address' });
  });

  it('connect-time lookup refuses a name that now resolves privately (DNS rebinding) and hands back vetted addresses', async () => {
    const s = service({}, { 'rebind.example.com': [v4('127.0.0.1')], 'ok.example.com': [v4('93.184.216.34'), v6('2606:4700:4700::1111')] });
    const lookup = (host: string, opts: { all?: boolean; family?: number }) =>
      new Promise<unknown>((resolve, reject) => s.lookup(host, opts, (err, address, family) => (err ? reject(err) : resolve(opts.all ? address : [address, family]))));
    await expect(lookup('rebind.example.com', {})).rejects.toMatchObject({ reason: 'private_address' });
    await expect(lookup('ok.example.com', { all: true })).resolves.toHaveLength(2);
    await expect(lookup('ok.example.com', { family: 6 })).resolves.toEqual(['2606:4700:4700::1111', 6]);
  });
});
