import { LRUCache } from 'lru-cache';
import { Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getAddress, isAddress } from 'ethers';
import { v7 as uuidv7, validate as isUuid } from 'uuid';
import { AppConfig } from '../../config/app-config';
import { CredentialRevocations, revocationHandle } from '../../kernel/auth/credential-cache';
import { Principal, PrincipalResolver } from '../../kernel/auth/principal';
import { AGENT_SCOPES, expandScopes, invalidScopes, MERCHANT_SCOPES } from '../../kernel/auth/scopes';
import { digestsEqual, hashSecret, randomBase62 } from '../../kernel/auth/secrets';
import { AppError } from '../../common/errors/app-error';
import { TransactionHost, TxHost } from '../../database/transaction';
import type { MeDto } from './dto/me.dto';
import { ApiKey, OAuthClient, OAuthToken, Organization } from './orgs.entity';
import { OrgsRepository } from './orgs.repository';
import { AgentDirectory, AgentRef } from './agent-directory.port';
import { VerificationSnapshotSource } from './verification-snapshot.port';
import { latePort } from '../../common/late-port';

export const MERCHANT_KEY_PREFIX = 'bk_live_';
export const AGENT_KEY_PREFIX = 'bk_agent_live_';
export const OAUTH_TOKEN_PREFIX = 'bat_';
export const OAUTH_CLIENT_PREFIX = 'bac_';
export const OAUTH_SECRET_PREFIX = 'bacs_';

const HANDLE = /^[a-z0-9](?:[a-z0-9-]{1,38}[a-z0-9])?$/;
/** An API key's `last_used_at` is written at most this often per key and process (docs/decisions.md "API key last used"). */
export const KEY_USE_INTERVAL_MS = 60_000;
/** Keys whose last stamp this process remembers; the oldest is forgotten first (a forgotten key costs one UPDATE that the SQL guard may skip). */
const KEY_USE_MEMORY = 10_000;

/**
 * Organisations, agents and credentials (docs/architecture.md §3): creates them (operator CLI) and resolves a
 * presented secret into a {@link Principal} for the auth guard. Secrets are shown once at
 * creation; only SHA-256 digests are stored and compared in constant time.
 */
@Injectable()
export class OrgsService extends PrincipalResolver {
  private readonly logger = new Logger(OrgsService.name);
  /** Key id → when this process last stamped its `last_used_at` (ms since the epoch), at most KEY_USE_MEMORY keys. */
  private readonly keyUses = new LRUCache<string, number>({ max: KEY_USE_MEMORY });

  constructor(
    private readonly repo: OrgsRepository,
    private readonly config: AppConfig,
    private readonly moduleRef: ModuleRef,
    private readonly revocations: CredentialRevocations,
    private readonly txHost: TransactionHost,
  ) {
    super();
  }

  private tx<T>(fn: () => Promise<T>): Promise<T> {
    return (this.txHost as TxHost).withTransaction(fn);
  }

  /**
   * GET /api/v1/me and svc_me: the caller's identity, organisation, granted scopes and
   * verification snapshot (from the verification module, docs/architecture.md §12).
   * @throws AppError unauthorized when the organisation no longer exists.
   */
  async me(principal: Principal): Promise<MeDto> {
    const org = await this.getOrganization(principal.organizationId);
    if (!org) throw new AppError('unauthorized', 'Invalid or expired credential');
    return {
      identity: { type: principal.kind, credentialId: principal.credentialId, agentId: principal.agentId },
      organization: { id: org.id, name: org.name, handle: org.handle, payoutAddress: org.payoutAddress },
      scopes: [...principal.grantedScopes],
      verification: await this.verification().snapshot(org.id),
    };
  }

  /** @throws AppError invalid_request for a bad handle/address or a handle already taken. */
  async createOrganization(input: { name: string; handle: string; payoutAddress?: string }): Promise<Organization> {
    if (!input.name?.trim()) throw AppError.invalidParam('name', 'must not be empty');
    if (!HANDLE.test(input.handle)) throw AppError.invalidParam('handle', 'must be 3–40 of a-z, 0-9 and -');
    if (await this.repo.findOrganizationByHandle(input.handle)) throw AppError.invalidParam('handle', 'is already taken');
    const org = Object.assign(new Organization(), {
      id: uuidv7(),
      name: input.name.trim(),
      handle: input.handle,
      payoutAddress: input.payoutAddress ? this.address('payoutAddress', input.payoutAddress) : null,
    });
    await this.repo.insertOrganization(org);
    return org;
  }

  /** Most organisations one address may create from the console (docs/architecture.md §19). */
  static readonly MAX_OWNED_ORGANIZATIONS = 5;

  /**
   * Self-serve creation from the console (docs/architecture.md §19): `owner` becomes the first owner
   * (the payout address defaults to it). Serialised per owner address, so concurrent requests
   * cannot pass the limit.
   * @throws AppError forbidden (`details.reason: "organization_limit"`) when `owner` already owns
   *   {@link OrgsService.MAX_OWNED_ORGANIZATIONS}; invalid_request as {@link createOrganization}.
   */
  async createOwnedOrganization(owner: string, input: { name: string; handle: string; payoutAddress?: string }): Promise<Organization> {
    const ownerAddress = this.address('owner', owner);
    return this.tx(async () => {
      await this.repo.lockOwnerAddress(ownerAddress);
      const owned = await this.repo.findOwnedOrganizations(ownerAddress);
      if (owned.length >= OrgsService.MAX_OWNED_ORGANIZATIONS) {
        throw new AppError('forbidden', `An address may own at most ${OrgsService.MAX_OWNED_ORGANIZATIONS} organisations`, {
          reason: 'organization_limit',
          limit: OrgsService.MAX_OWNED_ORGANIZATIONS,
        });
      }
      const org = await this.createOrganization({ ...input, payoutAddress: input.payoutAddress || ownerAddress });
      await this.repo.insertOwner(org.id, ownerAddress);
      return org;
    });
  }

  /** Organisations `address` owns (docs/architecture.md §19), oldest first. */
  ownedOrganizations(address: string) {
    return this.repo.findOwnedOrganizations(address);
  }

  /** Agents whose owner address is `address` (an agent's owner manages it from the console, DESIGN §19). */
  async ownedAgents(address: string): Promise<Array<{ id: string; slug: string; organizationId: string; organizationName: string }>> {
    const agents = await this.agents().ownedBy(address);
    const names = await this.repo.organizationNames(agents.map((a) => a.organizationId));
    return agents.map((a) => ({ id: a.id, slug: a.slug, organizationId: a.organizationId, organizationName: names.get(a.organizationId) ?? '' }));
  }

  /** The agent `agentId` when `address` is its owner address (case-insensitive), else null. */
  async agentOwnedBy(agentId: string, address: string): Promise<AgentRef | null> {
    const agent = await this.agents().agentRef(agentId);
    return agent && agent.ownerAddress.toLowerCase() === address.toLowerCase() ? agent : null;
  }

  /** Whether `address` is an owner of the organisation. */
  isOwner(organizationId: string, address: string): Promise<boolean> {
    return this.repo.isOwner(organizationId, address);
  }

  /** The organisation's owner addresses. */
  async owners(organizationId: string): Promise<Array<{ address: string; createdAt: string }>> {
    return (await this.repo.findOwners(organizationId)).map((o) => ({ address: o.address, createdAt: o.createdAt.toISOString() }));
  }

  /** Adds an owner (idempotent). @throws AppError invalid_request for a malformed address. */
  async addOwner(organizationId: string, address: string) {
    await this.repo.insertOwner(organizationId, this.address('address', address));
    return this.owners(organizationId);
  }

  /**
   * Removes an owner, never the last one (docs/architecture.md §19).
   * @throws AppError not_found for an address that is not an owner; 409 invalid_request (`details.reason: "last_owner"`) for the last.
   */
  async removeOwner(organizationId: string, address: string) {
    const outcome = await this.tx(() => this.repo.deleteOwner(organizationId, address));
    if (outcome === 'absent') throw AppError.notFound('owner');
    if (outcome === 'last') throw new AppError('invalid_request', 'An organisation keeps at least one owner', { reason: 'last_owner' }, 409);
    return this.owners(organizationId);
  }

  /** The organisation's API keys (no secrets), newest first. */
  listApiKeys(organizationId: string) {
    return this.repo.findApiKeys(organizationId);
  }

  /**
   * Revokes a key of this organisation only (console, docs/architecture.md §19).
   * @throws AppError not_found for a key of another organisation or an unknown id.
   */
  async revokeOwnApiKey(organizationId: string, id: string) {
    const key = isUuid(id) ? await this.repo.findApiKey(id) : null;
    if (!key || key.organizationId !== organizationId) throw AppError.notFound('api key');
    return this.revokeApiKey(id);
  }

  /** An organisation's OAuth clients, newest first (console; never a secret). */
  listOAuthClients(organizationId: string): Promise<OAuthClient[]> {
    return this.repo.findOAuthClients(organizationId);
  }

  /**
   * Revokes an OAuth client of this organisation only (console, docs/architecture.md §19): no new
   * tokens, and its tokens stop working at once ({@link revokeOAuthClient}).
   * @throws AppError not_found for another organisation's client or an unknown `client_id`.
   */
  async revokeOwnOAuthClient(organizationId: string, clientId: string): Promise<{ clientId: string; revokedAt: Date }> {
    const client = await this.repo.findOAuthClient(clientId);
    if (!client || client.organizationId !== organizationId) throw AppError.notFound('oauth client');
    return this.revokeOAuthClient(clientId);
  }

  getOrganization(id: string): Promise<Organization | null> {
    return this.repo.findOrganization(id);
  }

  /**
   * The organisation bound to `address` as an escrow's buyer (issue 4: a party is bound by address):
   * among organisations whose payout address is `address` and proven (operator CLI, or proven in the
   * console, issue 28), the oldest; null if none. Never used for the seller: that is the checkout's.
   */
  async organizationIdForAddress(address: string): Promise<string | null> {
    return (await this.repo.findOrganizationByPayoutAddress(address))?.id ?? null;
  }

  /**
   * Checks a new agent's organisation and slug (the agents module writes the row, DESIGN §13).
   * @returns the owner address, checksummed.
   * @throws AppError not_found for an unknown organisation; invalid_request for a bad slug or address.
   */
  async checkNewAgent(input: { organizationId: string; slug: string; ownerAddress: string }): Promise<string> {
    await this.requireOrganization(input.organizationId);
    if (!HANDLE.test(input.slug)) throw AppError.invalidParam('slug', 'must be 3–40 of a-z, 0-9 and -');
    return this.address('ownerAddress', input.ownerAddress);
  }

  /**
   * Creates a merchant or agent API key.
   * @returns the key row and its plaintext secret (`bk_live_…` / `bk_agent_live_…`), shown once.
   * @throws AppError invalid_request for unknown scopes or scopes the key kind may not hold.
   */
  async createApiKey(input: { organizationId: string; kind: 'merchant' | 'agent'; agentId?: string; scopes: string[]; createdBy?: string }) {
    await this.requireOrganization(input.organizationId);
    this.checkScopes(input.scopes, input.kind === 'agent' ? AGENT_SCOPES : MERCHANT_SCOPES);
    if (input.kind === 'agent') {
      const agent = input.agentId ? await this.agents().agentRef(input.agentId) : null;
      if (!agent || agent.organizationId !== input.organizationId) throw AppError.invalidParam('agent', 'must be an agent of this organisation');
    }
    const secret = (input.kind === 'agent' ? AGENT_KEY_PREFIX : MERCHANT_KEY_PREFIX) + randomBase62(32);
    const key = Object.assign(new ApiKey(), {
      id: uuidv7(),
      organizationId: input.organizationId,
      agentId: input.kind === 'agent' ? input.agentId! : null,
      kind: input.kind,
      displayPrefix: secret.slice(0, secret.indexOf('_live_') + 10),
      secretHash: hashSecret(secret),
      scopes: input.scopes,
      revokedAt: null,
      createdBy: input.createdBy ?? 'operator',
    });
    await this.repo.insertApiKey(key);
    return { key, secret };
  }

  /** @returns the client and its plaintext secret, shown once. */
  async createOAuthClient(input: { organizationId: string; scopes: string[] }) {
    await this.requireOrganization(input.organizationId);
    this.checkScopes(input.scopes, MERCHANT_SCOPES);
    const clientSecret = OAUTH_SECRET_PREFIX + randomBase62(32);
    const client = Object.assign(new OAuthClient(), {
      id: uuidv7(),
      organizationId: input.organizationId,
      clientId: OAUTH_CLIENT_PREFIX + randomBase62(16),
      secretHash: hashSecret(clientSecret),
      scopes: input.scopes,
      revokedAt: null,
    });
    await this.repo.insertOAuthClient(client);
    return { client, clientSecret };
  }

  /**
   * OAuth 2.0 client-credentials grant (RFC 6749 §4.4). Requested scopes must be a subset of the
   * client's; none requested → all of them.
   * @throws AppError unauthorized for bad client credentials; invalid_request for scopes outside the client's.
   */
  async issueToken(input: { clientId: string; clientSecret: string; scope?: string }) {
    const client = await this.repo.findOAuthClient(input.clientId);
    const ok = client && !client.revokedAt && digestsEqual(client.secretHash, hashSecret(input.clientSecret));
    if (!client || !ok) throw new AppError('unauthorized', 'Invalid client credentials');
    const requested = input.scope?.trim() ? input.scope.trim().split(/\s+/) : client.scopes;
    const allowed = expandScopes(client.scopes);
    const outside = requested.filter((s) => invalidScopes([s]).length > 0 || [...expandScopes([s])].some((e) => !allowed.has(e)));
    if (outside.length) throw AppError.invalidParam('scope', `includes scopes the client does not hold: ${outside.join(' ')}`);
    const token = OAUTH_TOKEN_PREFIX + randomBase62(32);
    const ttl = this.config.env.OAUTH_TOKEN_TTL_SECONDS;
    await this.repo.insertOAuthToken(
      Object.assign(new OAuthToken(), {
        id: uuidv7(),
        oauthClientId: client.id,
        organizationId: client.organizationId,
        tokenHash: hashSecret(token),
        scopes: requested,
        expiresAt: new Date(Date.now() + ttl * 1000),
      }),
    );
    return { access_token: token, token_type: 'Bearer' as const, expires_in: ttl, scope: requested.join(' ') };
  }

  /**
   * Revokes an API key at once: the next request with it gets 401 on every api replica (operator CLI
   * `key:revoke`, docs/architecture.md §9): the row is revoked, then its revocation marker is set for
   * the credential caches (docs/decisions.md, "Credential cache"). Revoking again keeps the first revocation time.
   * @throws AppError not_found for an unknown key id; invalid_request for an id that is not a UUID.
   */
  async revokeApiKey(id: string): Promise<{ id: string; revokedAt: Date }> {
    if (!isUuid(id)) throw AppError.invalidParam('key', 'must be an API key id (UUID)');
    const revoked = await this.repo.revokeApiKey(id);
    if (!revoked) throw AppError.notFound('api key');
    await this.revocations.mark(revocationHandle({ kind: 'merchant', credentialId: revoked.id, actor: '' }));
    return revoked;
  }

  /**
   * Revokes an OAuth client by its `client_id` (bac_…): no new tokens, and its access tokens
   * stop working at once (operator CLI `oauth:client:revoke`, docs/architecture.md §9).
   * Revoking again keeps the first revocation time.
   * @throws AppError not_found for an unknown client.
   */
  async revokeOAuthClient(clientId: string): Promise<{ clientId: string; revokedAt: Date }> {
    const revoked = await this.repo.revokeOAuthClient(clientId);
    if (!revoked) throw AppError.notFound('oauth client');
    await this.revocations.mark(revocationHandle({ kind: 'oauth', credentialId: '', actor: `oauth:${revoked.id}` }));
    return { clientId: revoked.clientId, revokedAt: revoked.revokedAt };
  }

  /** A revoked key, a revoked OAuth client's token, or an expired token resolves to null. */
  async resolve(secret: string): Promise<Principal | null> {
    if (secret.length > 200) return null;
    const digest = hashSecret(secret);
    if (secret.startsWith(AGENT_KEY_PREFIX) || secret.startsWith(MERCHANT_KEY_PREFIX)) {
      const key = await this.repo.findApiKeyByHash(digest);
      if (!key || key.revokedAt || !digestsEqual(key.secretHash, digest)) return null;
      const expectedKind = secret.startsWith(AGENT_KEY_PREFIX) ? 'agent' : 'merchant';
      if (key.kind !== expectedKind) return null;
      return {
        kind: key.kind,
        credentialId: key.id,
        organizationId: key.organizationId,
        agentId: key.agentId,
        actor: key.kind === 'agent' ? `agent:${key.agentId}` : 'merchant',
        grantedScopes: key.scopes,
        scopes: expandScopes(key.scopes),
      };
    }
    if (secret.startsWith(OAUTH_TOKEN_PREFIX)) {
      const token = await this.repo.findOAuthTokenByHash(digest);
      if (!token || token.clientRevokedAt || !digestsEqual(token.tokenHash, digest) || token.expiresAt.getTime() <= Date.now()) return null;
      return {
        kind: 'oauth',
        credentialId: token.id,
        organizationId: token.organizationId,
        agentId: null,
        actor: `oauth:${token.oauthClientId}`,
        grantedScopes: token.scopes,
        scopes: expandScopes(token.scopes),
        expiresAt: token.expiresAt.getTime(),
      };
    }
    return null;
  }

  /**
   * Stamps an API key's `last_used_at` when this process has not done so in the last
   * {@link KEY_USE_INTERVAL_MS} (the SQL skips it, too, when another process did): a request costs a
   * map lookup, a key at most one UPDATE a minute per process (docs/decisions.md "API key last used").
   * OAuth tokens and console sessions are not stamped. Never throws.
   */
  async used(principal: Principal): Promise<void> {
    if (principal.kind !== 'merchant' && principal.kind !== 'agent') return;
    const now = Date.now();
    const last = this.keyUses.get(principal.credentialId);
    if (last !== undefined && now - last < KEY_USE_INTERVAL_MS) return;
    this.keyUses.set(principal.credentialId, now);
    try {
      await this.repo.touchApiKey(principal.credentialId);
    } catch (err) {
      this.keyUses.delete(principal.credentialId); // try again on the next request
      this.logger.warn(`api key ${principal.credentialId}: last_used_at not written: ${(err as Error).message}`);
    }
  }

  /** The agents module depends on this service: resolved at call time. */
  private readonly agents = latePort(() => this.moduleRef, AgentDirectory);

  /** The verification module depends on this service: resolved at call time. */
  private readonly verification = latePort(() => this.moduleRef, VerificationSnapshotSource);

  private async requireOrganization(id: string): Promise<Organization> {
    const org = await this.repo.findOrganization(id);
    if (!org) throw AppError.notFound('organization');
    return org;
  }

  private checkScopes(scopes: string[], allowedForKind: readonly string[]) {
    if (!scopes.length) throw AppError.invalidParam('scopes', 'must list at least one scope');
    const bad = invalidScopes(scopes);
    if (bad.length) throw AppError.invalidParam('scopes', `has unknown scopes: ${bad.join(', ')}`);
    const notForKind = scopes.filter((s) => [...expandScopes([s])].some((e) => !allowedForKind.includes(e)));
    if (notForKind.length) throw AppError.invalidParam('scopes', `not allowed for this key type: ${notForKind.join(', ')}`);
  }

  private address(param: string, value: string): string {
    if (!isAddress(value)) throw AppError.invalidParam(param, 'must be a 0x-prefixed EVM address');
    return getAddress(value);
  }
}
