import type { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { MERCHANT_SCOPES } from '../../src/kernel/auth/scopes';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { OrgsService } from '../../src/modules/orgs/orgs.service';

export interface TestOrg {
  organizationId: string;
  /** A merchant key holding `scopes` (default: every merchant scope). */
  key: string;
  keyId: string;
}

/** Creates an organisation and a merchant key through the same service the CLI uses. */
export async function createOrg(
  app: INestApplicationContext,
  opts: { scopes?: string[]; payoutAddress?: string; handle?: string } = {},
): Promise<TestOrg> {
  const orgs = app.get(OrgsService);
  return (app.get(TransactionHost) as TxHost).withTransaction(async () => {
    const org = await orgs.createOrganization({
      name: 'Test Org',
      handle: opts.handle ?? `org-${randomUUID().slice(0, 8)}`,
      payoutAddress: opts.payoutAddress,
    });
    const { key, secret } = await orgs.createApiKey({ organizationId: org.id, kind: 'merchant', scopes: opts.scopes ?? [...MERCHANT_SCOPES] });
    return { organizationId: org.id, key: secret, keyId: key.id };
  });
}

/** Another merchant key for an existing organisation. */
export async function createKey(app: INestApplicationContext, organizationId: string, scopes: string[]): Promise<string> {
  return (app.get(TransactionHost) as TxHost).withTransaction(async () => {
    const { secret } = await app.get(OrgsService).createApiKey({ organizationId, kind: 'merchant', scopes });
    return secret;
  });
}

/** An agent of the organisation and an agent key for it. */
export async function createAgentKey(app: INestApplicationContext, organizationId: string, scopes: string[]) {
  return (app.get(TransactionHost) as TxHost).withTransaction(async () => {
    const orgs = app.get(OrgsService);
    const agent = await app.get(AgentsService).create({ organizationId, slug: `agent-${randomUUID().slice(0, 8)}`, ownerAddress: '0x' + '11'.repeat(20) });
    const { secret } = await orgs.createApiKey({ organizationId, kind: 'agent', agentId: agent.id, scopes });
    return { agentId: agent.id, key: secret };
  });
}

/** An OAuth client; exchange it at POST /oauth/token for a bat_ token. */
export async function createOAuthClient(app: INestApplicationContext, organizationId: string, scopes: string[]) {
  return (app.get(TransactionHost) as TxHost).withTransaction(async () => {
    const { client, clientSecret } = await app.get(OrgsService).createOAuthClient({ organizationId, scopes });
    return { clientId: client.clientId, clientSecret };
  });
}
