import { Injectable } from '@nestjs/common';
import { AgentCard } from '@a2a-js/sdk';
import { AppConfig } from '../../config/app-config';

/** The a2a-x402 extension (google-agentic-commerce/a2a-x402 v0.2) our pay skill follows; declared in the card. */
export const X402_EXTENSION_URI = 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2';

/** Message metadata keys and status values of the a2a-x402 extension (its spec, "Metadata"). */
export const X402_META = {
  status: 'x402.payment.status',
  required: 'x402.payment.required',
  receipts: 'x402.payment.receipts',
  error: 'x402.payment.error',
} as const;

/** The A2A JSON-RPC endpoint, relative to API_BASE_URL. */
export const A2A_RPC_PATH = '/api/v1/a2a';

/**
 * The service's A2A agent card (docs/architecture.md §14): an A2A v1.0 `AgentCard` of @a2a-js/sdk
 * with the JSON-RPC endpoint `{API_BASE_URL}/api/v1/a2a` at protocol versions 1.0 and 0.3, the
 * skills `pay` and `create-checkout`, the a2a-x402 extension, and our two credential headers.
 */
@Injectable()
export class A2aCardService {
  private cached?: { base: string; card: AgentCard; json: Record<string, unknown> };

  constructor(private readonly config: AppConfig) {}

  /** The in-memory card (what the SDK's request handler validates versions against). */
  card(): AgentCard {
    return this.build().card;
  }

  /**
   * The card as served at `/.well-known/agent-card.json`, `/.well-known/agent.json` and
   * `GET /api/v1/a2a/agent-card`: `AgentCard.toJSON` (v1.0 wire form), plus the v0.3 top-level
   * `url`, `preferredTransport` and `protocolVersion` so a pre-1.0 reader of `agent.json` finds the
   * endpoint (a v1.0 reader ignores them: `supportedInterfaces` wins; docs/decisions.md "A2A").
   */
  json(): Record<string, unknown> {
    return this.build().json;
  }

  private build() {
    const base = this.config.env.API_BASE_URL.replace(/\/$/, '');
    if (this.cached?.base === base) return this.cached;
    const url = `${base}${A2A_RPC_PATH}`;
    const card = AgentCard.fromJSON({
      name: 'Payments control plane',
      description: 'Pays USDC from an agent wallet under its owner policy (a2a-x402 flow) and creates escrow-settled checkout sessions for merchants.',
      version: '2.0.0',
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
      provider: { organization: 'Payments control plane', url: base },
      documentationUrl: `${base}/docs`,
      capabilities: {
        streaming: false,
        pushNotifications: false,
        extensions: [
          {
            uri: X402_EXTENSION_URI,
            description: 'Payments follow the a2a-x402 states (payment-required → payment-submitted → payment-completed or payment-failed); the agent signer pays, no client payload needed.',
            required: false,
          },
        ],
      },
      securitySchemes: {
        bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'bk_agent_live_…, bk_live_… or bat_…' } },
        apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-Api-Key', description: 'bk_agent_live_… or bk_live_…' } },
      },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } }],
      defaultInputModes: ['application/json', 'text/plain'],
      defaultOutputModes: ['application/json'],
      skills: [
        {
          id: 'pay',
          name: 'Pay',
          description:
            'Pay USDC to an organisation handle or agent slug under the agent policy. Send a data part {"to": "acme", "amount": "5.00"}: the task asks for payment (input-required, x402.payment.status payment-required with the requirements); reply on the task with metadata x402.payment.status "payment-submitted" to pay. Needs an agent key with agent:pay.',
          tags: ['payments', 'usdc', 'x402'],
          examples: ['{"to": "acme", "amount": "5.00"}'],
          inputModes: ['application/json'],
          outputModes: ['application/json'],
        },
        {
          id: 'create-checkout',
          name: 'Create checkout',
          description:
            'Create an escrow-settled checkout session: a data part {"skill": "create-checkout", "amount": "25.00", "description": "…"} (the body of POST /api/v1/checkout-sessions). Needs a merchant credential with checkout:write.',
          tags: ['checkout', 'escrow'],
          examples: ['{"skill": "create-checkout", "amount": "25.00", "description": "Logo design"}'],
          inputModes: ['application/json'],
          outputModes: ['application/json'],
        },
      ],
    });
    const json = { ...(AgentCard.toJSON(card) as Record<string, unknown>), url, preferredTransport: 'JSONRPC', protocolVersion: '0.3.0' };
    this.cached = { base, card, json };
    return this.cached;
  }
}
