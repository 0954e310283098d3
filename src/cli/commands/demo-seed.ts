import { AppConfig } from '../../config/app-config';
import { MERCHANT_SCOPES } from '../../kernel/auth/scopes';
import { OrgsService } from '../../modules/orgs/orgs.service';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { inTransaction, DEMO_SELLER_ADDRESS } from '../command';
import type { CommandDeclaration } from '../command';

/** The `demo:seed` operator command (docs/operations.md; usage in `summary`). */
export const demoSeedCommand: CommandDeclaration = {
  name: 'demo:seed',
  summary: 'demo:seed [--handle demo-shop]   (a demo shop with every merchant scope, and the demo buyer’s organisation)',
  run: async (app, values) => {
    const config = app.get(AppConfig);
    const orgs = app.get(OrgsService);
    const handle = typeof values.handle === 'string' ? values.handle : `demo-shop-${Date.now().toString(36)}`;
    const buyerAddress = new Wallet(process.env.DEMO_BUYER_PRIVATE_KEY || anvilKey('demoBuyer')).address;
    const { org, key, buyerKey } = await inTransaction(app, async () => {
      const org = await orgs.createOrganization({ name: 'Demo Shop', handle, payoutAddress: process.env.DEMO_SELLER_ADDRESS || DEMO_SELLER_ADDRESS });
      const key = await orgs.createApiKey({ organizationId: org.id, kind: 'merchant', scopes: [...MERCHANT_SCOPES] });
      // The buyer side of the demo: the organisation bound to the demo buyer wallet (reused across runs,
      // since the oldest organisation with an address is the one bound to it).
      const buyerOrgId =
        (await orgs.organizationIdForAddress(buyerAddress)) ??
        (await orgs.createOrganization({ name: 'Demo Buyer', handle: `demo-buyer-${Date.now().toString(36)}`, payoutAddress: buyerAddress })).id;
      const buyerKey = await orgs.createApiKey({ organizationId: buyerOrgId, kind: 'merchant', scopes: ['escrow:read', 'escrow:write'] });
      return { org, key, buyerKey };
    });
    const api = config.env.API_BASE_URL.replace(/\/$/, '');
    const curl =
      `curl -s -X POST ${api}/api/v1/checkout-sessions -H 'X-Api-Key: ${key.secret}' ` +
      `-H 'Content-Type: application/json' -H 'Idempotency-Key: demo-${Date.now()}' -d '{"amount":"25.00","description":"Demo order"}'`;
    return {
      organizationId: org.id,
      handle: org.handle,
      payoutAddress: org.payoutAddress,
      merchantKey: key.secret,
      scopes: key.key.scopes,
      buyerKey: buyerKey.secret,
      buyerAddress,
      apiUrl: api,
      swaggerUrl: `${api}/docs`,
      checkoutBaseUrl: config.env.CHECKOUT_BASE_URL,
      curl,
    };
  },
  options: {
  handle: { type: 'string' },
  },
  secrets: [],
};
