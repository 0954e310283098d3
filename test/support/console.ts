import { getAddress, hexlify, randomBytes, type BaseWallet } from 'ethers';
import { SiweMessage } from 'siwe';
import { AGENT_CONSENT_TYPES, consentPayloadHash } from '../../src/modules/agents/agent-consent';
import { ownerDomain } from '../../src/modules/agents/owner-messages';
import type { TestApp } from './app';

/** A signed-in console session as a test client holds it. */
export interface ConsoleLogin {
  address: string;
  /** `pcp_console=<token>` for a Cookie header. */
  cookie: string;
  csrf: string;
  /** The raw Set-Cookie header of the sign-in. */
  setCookie: string;
}

/** A SIWE message for the test app's console (domain/uri of API_BASE_URL, chain 31337 unless overridden). */
export function siweMessage(wallet: BaseWallet, nonce: string, target: { domain: string; uri: string; chainId: number }, overrides: Partial<ConstructorParameters<typeof SiweMessage>[0] & object> = {}): string {
  const now = Date.now();
  return new SiweMessage({
    domain: target.domain,
    address: wallet.address,
    statement: 'Sign in to the payments console.',
    uri: target.uri,
    version: '1',
    chainId: target.chainId,
    nonce,
    issuedAt: new Date(now).toISOString(),
    expirationTime: new Date(now + 5 * 60_000).toISOString(),
    ...overrides,
  }).prepareMessage();
}

/** Asks for a nonce, signs a SIWE message with `wallet` (EIP-191) and signs in. */
export async function consoleSignIn(t: TestApp, wallet: BaseWallet): Promise<ConsoleLogin> {
  const n = await t.http.get('/console/api/nonce').expect(200);
  const message = siweMessage(wallet, n.body.nonce, n.body);
  const res = await t.http.post('/console/api/sign-in').send({ message, signature: await wallet.signMessage(message) });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${JSON.stringify(res.body)}`);
  const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('pcp_console='))!;
  return { address: res.body.address, cookie: setCookie.split(';')[0], csrf: res.body.csrfToken, setCookie };
}

/** Headers of a console API request acting for `organizationId`. */
export function consoleHeaders(login: ConsoleLogin, organizationId?: string): Record<string, string> {
  return { Cookie: login.cookie, 'X-CSRF-Token': login.csrf, ...(organizationId ? { 'X-Console-Organization': organizationId } : {}) };
}

/** An AgentConsent body `{nonce, deadline, signature}`: `wallet` signs the typed data a 403 agent_owner_consent_required offered. */
export async function consentFrom(wallet: BaseWallet, offered: unknown): Promise<{ nonce: string; deadline: number; signature: string }> {
  const typedData = offered as { domain: Record<string, unknown>; message: Record<string, unknown> };
  const signature = await wallet.signTypedData(typedData.domain, AGENT_CONSENT_TYPES, typedData.message);
  return { nonce: typedData.message.nonce as string, deadline: typedData.message.deadline as number, signature };
}

/** `wallet`'s AgentConsent `create_agent` (agentId = the slug) for an agent it is to own (chain 31337). */
export async function agentOwnerProof(wallet: BaseWallet, a: { organizationId: string; slug: string; ownerAddress: string }): Promise<{ nonce: string; deadline: number; signature: string }> {
  const nonce = hexlify(randomBytes(32));
  const deadline = Math.floor(Date.now() / 1000) + 600;
  const payloadHash = consentPayloadHash({ organizationId: a.organizationId, ownerAddress: getAddress(a.ownerAddress), slug: a.slug });
  const signature = await wallet.signTypedData(ownerDomain(31337), AGENT_CONSENT_TYPES, { agentId: a.slug, action: 'create_agent', payloadHash, nonce, deadline });
  return { nonce, deadline, signature };
}
