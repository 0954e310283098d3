import { Injectable } from '@nestjs/common';
import { requireUuid } from '../../common/http/path-id';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { AddOwnerDto, apiKeyView, type ConsoleOrganizationDto, CreateApiKeyDto, type CreatedApiKeyDto, type CreatedOAuthClientDto, CreateOrganizationDto, oauthClientView } from './dto/owner.dto';
import { OrgsService } from './orgs.service';
import { PayoutProofService } from './payout-proof.service';

/**
 * A console owner action on the organisation (DESIGN §17, §19): a console session acting for an
 * organisation its address owns; no scope (an owner's session holds them all); no Idempotency-Key:
 * adding and removing owners and revoking are idempotent by nature, and a stored replay of a
 * creation would keep its secret at rest (docs/decisions.md "Console").
 */
const ownerAction = <I = Record<string, unknown>>(name: string, input?: OperationSpec<I>['input']): OperationSpec<I> => ({ name, scopes: [], kinds: ['console'], input, idempotency: 'none' });

/** `add-owner` (POST /owners): adds an owner address (idempotent); answers the owners. */
export const ADD_OWNER = ownerAction<AddOwnerDto>('add-owner', AddOwnerDto);
/** `remove-owner` (POST /owners/{address}/remove): never the last (409 last_owner); `{address}` is the path parameter. */
export const REMOVE_OWNER = ownerAction('remove-owner');
/** `create-api-key` (POST /api-keys): a merchant key; its secret is in this answer only. */
export const CREATE_API_KEY = ownerAction<CreateApiKeyDto>('create-api-key', CreateApiKeyDto);
/** `revoke-api-key` (POST /api-keys/{id}/revoke): a key of this organisation; `{id}` is the path parameter. */
export const REVOKE_API_KEY = ownerAction('revoke-api-key');
/** `create-oauth-client` (POST /oauth-clients): client-credentials grant, merchant scopes; its secret is in this answer only. */
export const CREATE_OAUTH_CLIENT = ownerAction<CreateApiKeyDto>('create-oauth-client', CreateApiKeyDto);
/** `revoke-oauth-client` (POST /oauth-clients/{clientId}/revoke): `{clientId}` is the path parameter. */
export const REVOKE_OAUTH_CLIENT = ownerAction('revoke-oauth-client');

/**
 * `create-organization` (POST /console/api/organizations): self-serve, for the signed-in address
 * itself (no organisation yet; at most 5 per address). Another payout address than the signed-in one
 * signs for itself: that check (EIP-1271 is a chain call) is the work's `prepare`, outside any
 * transaction. No Idempotency-Key: the handle is unique, so a retry answers 400 handle taken.
 */
export const CREATE_ORGANIZATION: OperationSpec<CreateOrganizationDto> = {
  name: 'create-organization',
  scopes: [],
  kinds: ['console'],
  consoleActs: 'address',
  input: CreateOrganizationDto,
  idempotency: 'none',
};

/**
 * The organisation's console operations with their work (DESIGN §17: declared once; the console's
 * routes state them with `@Runs` and run their work). The views never show a secret or digest,
 * except the one answer that creates it.
 */
@Injectable()
export class OrgsOperations {
  readonly addOwner: Operation<AddOwnerDto>;
  readonly removeOwner: Operation;
  readonly createApiKey: Operation<CreateApiKeyDto>;
  readonly revokeApiKey: Operation;
  readonly createOAuthClient: Operation<CreateApiKeyDto>;
  readonly revokeOAuthClient: Operation;
  readonly createOrganization: Operation<CreateOrganizationDto>;

  constructor(orgs: OrgsService, proofs: PayoutProofService) {
    this.addOwner = defineOperation(ADD_OWNER, (ctx, input) => ({ run: () => orgs.addOwner(ctx.principal.organizationId, input.address) }));
    this.removeOwner = defineOperation(REMOVE_OWNER, (ctx) => ({ run: () => orgs.removeOwner(ctx.principal.organizationId, ctx.params.address ?? '') }));
    this.createApiKey = defineOperation(CREATE_API_KEY, (ctx, input) => ({
      run: async (): Promise<CreatedApiKeyDto> => {
        const { key, secret } = await orgs.createApiKey({ organizationId: ctx.principal.organizationId, kind: 'merchant', scopes: input.scopes, createdBy: ctx.principal.actor });
        return { ...apiKeyView(key), createdAt: new Date().toISOString(), secret };
      },
    }));
    this.revokeApiKey = defineOperation(REVOKE_API_KEY, (ctx) => {
      const id = requireUuid(ctx.params.id, 'api key');
      return {
        run: async () => {
          await orgs.revokeOwnApiKey(ctx.principal.organizationId, id);
          return (await orgs.listApiKeys(ctx.principal.organizationId)).filter((k) => k.id === id).map(apiKeyView)[0];
        },
      };
    });
    this.createOAuthClient = defineOperation(CREATE_OAUTH_CLIENT, (ctx, input) => ({
      run: async (): Promise<CreatedOAuthClientDto> => {
        const { client, clientSecret } = await orgs.createOAuthClient({ organizationId: ctx.principal.organizationId, scopes: input.scopes });
        return { ...oauthClientView({ ...client, createdAt: client.createdAt ?? new Date() }), clientSecret };
      },
    }));
    this.revokeOAuthClient = defineOperation(REVOKE_OAUTH_CLIENT, (ctx) => {
      const clientId = ctx.params.clientId ?? '';
      return {
        run: async () => {
          await orgs.revokeOwnOAuthClient(ctx.principal.organizationId, clientId);
          return (await orgs.listOAuthClients(ctx.principal.organizationId)).filter((c) => c.clientId === clientId).map(oauthClientView)[0];
        },
      };
    });
    this.createOrganization = defineOperation(CREATE_ORGANIZATION, (ctx, input) => {
      const owner = ctx.principal.address!;
      const { payoutProof: proof, ...fields } = input;
      return {
        // Another payout address than the signed-in one must sign for itself (issue 28; outside any transaction: EIP-1271 is a chain call).
        prepare: async () => {
          if (input.payoutAddress) await proofs.require(owner, input.handle, input.payoutAddress, proof);
        },
        run: async (): Promise<ConsoleOrganizationDto> => {
          const org = await orgs.createOwnedOrganization(owner, fields);
          return { id: org.id, name: org.name, handle: org.handle, payoutAddress: org.payoutAddress };
        },
      };
    });
  }
}
