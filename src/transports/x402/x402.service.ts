import { Injectable, Logger } from '@nestjs/common';
import { formatAmount, parseAmount } from '@lib/money';
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import { x402ResourceServer, type FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { EVM_NETWORK_CHAIN_ID_MAP } from '@x402/evm/v1';
import { getAddress } from 'ethers';
import type { Principal } from '../../kernel/auth/principal';
import type { SettleX402Dto } from '../../modules/payments/dto/x402-settle.dto';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { PaymentSettlement } from '../../modules/payments/payment-settlement.service';
import type { RowOwnedWork } from '../../kernel/idempotency/idempotency.service';
import { mapOwned, PAYMENT_RELAY_PURPOSE, PaymentRecord, PaymentsService } from '../../modules/payments/payments.service';
import { ChainAccess } from '../../chain/chain-access.service';
import { RelayerService } from '../../chain/relayer/relayer.service';
import { X402Advance, X402Faults, X402SettlementRecord, X402Settlements } from '../../modules/payments/x402-settlements.service';
import { ethersVerifySigner } from './evm-facilitator-signer';

/** The longest validity a challenge offers (and our signer signs): docs/architecture.md §13, 10 minutes. */
const MAX_TIMEOUT_SECONDS = 600;
const CHALLENGE_PATH = '/api/v1/x402/challenge';
/** Retry-After (seconds) of a 402 `reason: "pending"`. */
const RETRY_AFTER_SECONDS = 5;

/** The EIP-3009 authorization of an x402 "exact" payload, as signed (decimal and hex text). */
interface Eip3009Authorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: string;
}

const AUTHORIZATION_KEYS = ['from', 'nonce', 'to', 'validAfter', 'validBefore', 'value'];
const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEX_32 = /^0x[0-9a-fA-F]{64}$/;
const UINT = /^\d{1,78}$/;

/**
 * The payload of the exact EIP-3009 scheme, or why it is not one. `@x402/evm`'s verifier picks its
 * Permit2 branch whenever `permit2Authorization` is present, while settlement relays
 * `authorization`: so anything but exactly `{authorization, signature}` (and the six EIP-3009
 * fields, well formed) is refused before verification, and what was verified is what is relayed
 * (docs/architecture.md §14; EIP-3009 `transferWithAuthorization`).
 */
export function exactEip3009Payload(payload: PaymentPayload): { authorization: Eip3009Authorization; signature: string } | string {
  if (payload.accepted?.scheme !== 'exact') return 'Only the "exact" scheme is accepted';
  const inner = payload.payload as Record<string, unknown> | null;
  if (!inner || typeof inner !== 'object' || Array.isArray(inner)) return 'The payload must be {authorization, signature}';
  const keys = Object.keys(inner).sort();
  if (keys.length !== 2 || keys[0] !== 'authorization' || keys[1] !== 'signature') return 'The payload must be exactly {authorization, signature} of the EIP-3009 exact scheme';
  const auth = inner.authorization as Record<string, unknown> | null;
  if (!auth || typeof auth !== 'object' || Array.isArray(auth) || Object.keys(auth).sort().join() !== AUTHORIZATION_KEYS.join()) {
    return `The authorization must have exactly ${AUTHORIZATION_KEYS.join(', ')}`;
  }
  const ok =
    typeof auth.from === 'string' && HEX_ADDRESS.test(auth.from) && typeof auth.to === 'string' && HEX_ADDRESS.test(auth.to) &&
    typeof auth.nonce === 'string' && HEX_32.test(auth.nonce) &&
    [auth.value, auth.validAfter, auth.validBefore].every((v) => typeof v === 'string' && UINT.test(v)) &&
    typeof inner.signature === 'string' && /^0x[0-9a-fA-F]+$/.test(inner.signature);
  if (!ok) return 'The authorization fields are not well formed (addresses, a 32-byte nonce, decimal integers, a hex signature)';
  return { authorization: auth as unknown as Eip3009Authorization, signature: inner.signature as string };
}

/** A challenge's terms: what `?to=&amount=&resource=` asks for, resolved. Amount in base units. */
interface ChallengeTerms {
  payeeHandle: string;
  payTo: string;
  amount: bigint;
  resource: string;
}

/** What the HTTP layer sends: status, headers and a JSON body. */
export interface X402HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * x402 for the service (docs/architecture.md §14, protocol v2 with a v1-shaped body).
 *
 * - {@link challenge}: `GET /x402/challenge` answers 402 with the v2 `PAYMENT-REQUIRED` header (encoded
 *   by `@x402/core/http`) and the v1 body; `payTo` is the payee's address, `extra` the token's own
 *   EIP-712 domain read from the chain.
 * - {@link paid}: a retry with `PAYMENT-SIGNATURE` (or `X-PAYMENT`) is verified by `@x402/evm`'s exact
 *   scheme (EIP-3009 signature, amount, payTo, asset, time window, balance), reserved by (payer,
 *   nonce) — so a replayed header is refused and moves no money — then settled through the relayer
 *   queue (`transferWithAuthorization`) and answered 200 with `PAYMENT-RESPONSE`.
 * - {@link settle}: an agent pays a challenge under its policy as a Payment `mode: "x402"`: ours are
 *   settled on chain; another server's get the signed payment header back for the agent to send.
 * No chain call runs inside a database transaction.
 */
@Injectable()
export class X402Service {
  private readonly logger = new Logger('X402');
  private domain?: Promise<{ name: string; version: string }>;
  private server?: Promise<x402ResourceServer>;

  constructor(
    private readonly config: AppConfig,
    private readonly chain: ChainAccess,
    private readonly relayer: RelayerService,
    private readonly payments: PaymentsService,
    private readonly settlement: PaymentSettlement,
    private readonly settlements: X402Settlements,
    private readonly faults: X402Faults,
  ) {}

  /** CAIP-2 id of our chain, the network of v2 requirements. */
  get caip2(): string {
    return `eip155:${this.chain.chainId}`;
  }

  /** The v1 network name of our chain where x402 v1 has one, else the CAIP-2 id (v1 clients pay only on named chains). */
  get v1Network(): string {
    const named = Object.entries(EVM_NETWORK_CHAIN_ID_MAP as Record<string, number>).find(([, id]) => id === this.chain.chainId);
    return named ? named[0] : this.caip2;
  }

  /**
   * GET /x402/challenge without a payment: 402 with both encodings of the payment requirements.
   * @throws AppError 400 (amount below X402_MIN_AMOUNT or malformed, unknown payee, no payout address, no `to`).
   */
  async challenge(query: { to?: string; amount?: string; resource?: string }): Promise<X402HttpAnswer> {
    const terms = await this.terms(query);
    const requirements = await this.requirements(terms);
    const description = `Payment of ${formatAmount(terms.amount)} USDC to ${terms.payeeHandle}`;
    const paymentRequired = await (
      await this.resourceServer()
    ).createPaymentRequiredResponse([requirements], { url: terms.resource, description, mimeType: 'application/json' }, 'PAYMENT-SIGNATURE header is required');
    return {
      status: 402,
      headers: { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(paymentRequired), 'Cache-Control': 'no-store' },
      body: {
        x402Version: 1,
        error: 'X-PAYMENT header is required',
        accepts: [
          {
            scheme: 'exact',
            network: this.v1Network,
            maxAmountRequired: requirements.amount,
            resource: terms.resource,
            description,
            mimeType: 'application/json',
            payTo: requirements.payTo,
            asset: requirements.asset,
            maxTimeoutSeconds: requirements.maxTimeoutSeconds,
            extra: requirements.extra,
          },
        ],
      },
    };
  }

  /**
   * A retry of a challenge URL carrying a payment (`PAYMENT-SIGNATURE` v2, or `X-PAYMENT`): refused
   * unless it is exactly the EIP-3009 exact payload, verified against the requirements re-derived
   * from the URL, reserved by (payer, nonce), settled through the relayer queue (docs/architecture.md
   * §14, §18). Answers 200 with `PAYMENT-RESPONSE` once the transfer is mined at CONFIRMATIONS; while
   * its relay is queued or unmined, 402 `reason: "pending"` with `Retry-After` (the same header later
   * answers 200, once); a refused payment answers 402 with `reason` and moves no money.
   * @throws AppError 400 for a malformed challenge query (as {@link challenge}).
   */
  async paid(query: { to?: string; amount?: string; resource?: string }, header: string): Promise<X402HttpAnswer> {
    const terms = await this.terms(query);
    const requirements = await this.requirements(terms);
    const refuse = (error: string, reason: string, headers: Record<string, string> = {}): X402HttpAnswer => ({
      status: 402,
      headers: { 'Cache-Control': 'no-store', ...headers },
      body: { x402Version: 2, error, reason, accepts: [requirements] },
    });
    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(header);
    } catch {
      return refuse('The payment header is not a base64 JSON x402 payment payload', 'invalid_payload');
    }
    if (payload.x402Version !== 2) return refuse(`x402 v1 payments need a named network; this chain is ${this.caip2}: pay with x402 v2 (PAYMENT-SIGNATURE)`, 'unsupported_version');
    const shape = exactEip3009Payload(payload);
    if (typeof shape === 'string') return refuse(shape, 'invalid_payload');
    const { authorization: auth, signature } = shape;
    const alreadyUsed = () => refuse('This payment was already used: one payment buys one response', 'payment_already_used');
    const answer = async (step: X402Advance): Promise<X402HttpAnswer> => {
      const row = step.row;
      if (row.status === 'settled') {
        if (!(await this.settlements.markAnswered(row.id))) return alreadyUsed();
        const settlement = { success: true, transaction: row.txHash!, network: this.caip2 as PaymentRequirements['network'], payer: getAddress(auth.from) };
        return {
          status: 200,
          headers: { 'PAYMENT-RESPONSE': encodePaymentResponseHeader(settlement), 'Cache-Control': 'no-store' },
          body: { paid: true, resource: terms.resource, payTo: terms.payTo, amount: formatAmount(terms.amount), settlement },
        };
      }
      if (row.status === 'failed') return refuse(`The payment was not settled: its authorization ${row.error === 'cancelled' ? 'was cancelled' : 'expired unused'}`, 'settlement_failed');
      if (step.refused) {
        // Our relay was refused before any broadcast, yet the authorization is still valid: not failed (DESIGN §18; issue 29 finding 6).
        return refuse(`The payment could not be settled yet (${step.refused}); its authorization stays valid until validBefore: retry the same header`, 'pending', { 'Retry-After': String(RETRY_AFTER_SECONDS) });
      }
      return refuse('The payment is being settled on chain: retry the same header to receive the response', 'pending', { 'Retry-After': String(RETRY_AFTER_SECONDS) });
    };
    const waitMs = this.config.env.X402_RECEIPT_WAIT_MS;
    const resume = async (row: X402SettlementRecord): Promise<X402HttpAnswer> => {
      // The same header retried: same signed authorization for the same challenge terms; anything else is a replay.
      if (row.signature !== signature || row.payTo.toLowerCase() !== terms.payTo.toLowerCase() || row.amount !== terms.amount) return alreadyUsed();
      if (row.status === 'settled' || row.status === 'failed') return answer({ row });
      return answer(await this.settlements.advance(row.id, waitMs, 'request'));
    };
    const existing = await this.settlements.find(auth.from, auth.nonce);
    if (existing) return resume(existing);
    const verified = await this.verify(payload, requirements);
    if (!verified.isValid) return refuse(verified.invalidMessage ?? verified.invalidReason ?? 'The payment does not verify', verified.invalidReason ?? 'invalid_payment');
    await this.relayer.assertFunded(); // 503 unavailable before the reservation (DESIGN §18): nothing stored, nothing failed
    const id = await this.settlements.reserve({ payer: auth.from, nonce: auth.nonce, to: terms.payTo, value: auth.value, validAfter: auth.validAfter, validBefore: auth.validBefore, signature, payeeHandle: terms.payeeHandle, resource: terms.resource });
    if (!id) return resume((await this.settlements.find(auth.from, auth.nonce))!);
    this.faults.hit('after_reserved');
    return answer(await this.settlements.advance(id, waitMs, 'request', true));
  }

  /**
   * POST /x402/settle for an agent (docs/architecture.md §14): the policy decides (§13 order), the
   * session signer signs an EIP-3009 transferWithAuthorization with the token's own domain.
   * @returns the row-owned work of operation `settle-x402` (DESIGN §5, §17; the payment is the
   *   record) answering `{payment, settlement}` for our own challenges (settled on chain),
   *   `{payment, header}` for another server's.
   * @param input the body as the kernel validated it ({@link SettleX402Dto}).
   * @throws AppError 400 `unsupported_requirement` (scheme, network or asset not ours), 400 for a
   *   `paymentRequired` that does not decode; as the work's outcome 403 refusals of §13, 422 idempotency_conflict.
   */
  async settle(principal: Principal, input: SettleX402Dto, key: string | undefined): Promise<RowOwnedWork<PaymentRecord>> {
    const { requirement, resource, version } = this.readRequirement(input);
    const unsupported = (why: string) => new AppError('invalid_request', `Unsupported payment requirement: ${why}`, { reason: 'unsupported_requirement' });
    if (requirement.scheme !== 'exact') throw unsupported('only scheme "exact" is signed');
    if (requirement.network !== this.caip2 && requirement.network !== this.v1Network) throw unsupported(`only network ${this.caip2} is signed`);
    if (String(requirement.asset).toLowerCase() !== this.chain.usdc.address.toLowerCase()) throw unsupported('only our USDC is signed');
    if (!/^\d{1,78}$/.test(String(requirement.amount)) || BigInt(requirement.amount) <= 0n) throw unsupported('amount must be positive base units');
    const amount = BigInt(requirement.amount);
    const own = this.ownChallenge(resource);
    if (own) {
      const terms = await this.terms(own);
      if (terms.payTo.toLowerCase() !== String(requirement.payTo).toLowerCase() || terms.amount !== amount) {
        throw unsupported('it does not match the challenge it names (payTo or amount differ)');
      }
      const work = this.payments.spendWork(principal, { to: terms.payeeHandle, amount: formatAmount(amount), mode: 'x402' }, key, { extra: { resource } });
      return mapOwned(work, async (row) => {
        let payment = row;
        // x402's `success: true` means the transfer is on chain (§18): a broadcast relay is waited for,
        // bounded, at the confirmation depth; until then the answer is `success: false` with the payment submitted.
        // Every hash the relayer signed for it, fee-bump replacements included (the relayer's rows are the one list).
        const hashes = await this.relayer.signedHashes(payment.id, [PAYMENT_RELAY_PURPOSE]);
        if (payment.status === 'submitted' && payment.authNonce && hashes.length) {
          const mined = await this.settlement.confirmUse(payment.fromAddress, payment.authNonce, hashes, this.config.env.X402_RECEIPT_WAIT_MS);
          if (mined) payment = (await this.payments.findForAgent(payment.agentId, payment.id)) ?? payment;
        }
        const success = payment.status === 'succeeded';
        const settlement = { success, transaction: payment.txHash ?? hashes.at(-1) ?? null, network: this.caip2, payer: payment.fromAddress };
        return { payment: this.payments.toDto(payment), settlement };
      });
    }
    const work = this.payments.spendWork(principal, { to: String(requirement.payTo), amount: formatAmount(amount), mode: 'x402' }, key, {
      extra: { resource },
      payToAddress: true,
    });
    return mapOwned(work, (payment) => this.paymentHeader(payment, requirement, resource, version));
  }

  /** The answer for another server's challenge: the payment and the signed payment header for the agent to send (docs/architecture.md §14). */
  private paymentHeader(payment: PaymentRecord, requirement: PaymentRequirements, resource: string, version: 1 | 2): Record<string, unknown> {
    if (payment.status === 'failed') {
      // Its authorization is dead (cancelled or expired unused): a header for it would only be refused.
      throw new AppError('invalid_request', 'This payment failed; sign a new one with another Idempotency-Key', { paymentId: payment.id, status: 'failed', allowed: ['pending', 'submitted', 'succeeded'], failureReason: payment.failureReason }, 409);
    }
    if (!payment.authSignature) throw new AppError('unavailable', 'The payment is reserved but not signed yet; retry with the same Idempotency-Key', { paymentId: payment.id }, 503, { 'Retry-After': '1' });
    const authorization = { from: payment.fromAddress, to: payment.toAddress, value: payment.amount.toString(), validAfter: '0', validBefore: String(payment.authValidBefore), nonce: payment.authNonce! };
    const body =
      version === 2
        ? { x402Version: 2, resource: { url: resource }, accepted: requirement, payload: { signature: payment.authSignature, authorization } }
        : { x402Version: 1, scheme: 'exact', network: requirement.network, payload: { signature: payment.authSignature, authorization } };
    return {
      payment: this.payments.toDto(payment),
      header: { name: version === 2 ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT', value: Buffer.from(JSON.stringify(body)).toString('base64') },
    };
  }

  /**
   * The requirement in a settle body, validated by the kernel ({@link SettleX402Dto}): the first
   * acceptable entry of a v2 PAYMENT-REQUIRED value, or the v1 `accepts` entry itself (its
   * required fields are present: the DTO requires them without `paymentRequired`).
   */
  private readRequirement(input: SettleX402Dto): { requirement: PaymentRequirements; resource: string; version: 1 | 2 } {
    if (input.paymentRequired != null) {
      let pr: PaymentRequired;
      try {
        pr = decodePaymentRequiredHeader(input.paymentRequired);
      } catch {
        throw AppError.invalidParam('paymentRequired', 'is not a PAYMENT-REQUIRED header value (base64 JSON)');
      }
      const accepts = Array.isArray(pr.accepts) ? pr.accepts : [];
      const ours = accepts.find((a) => a.scheme === 'exact' && a.network === this.caip2 && String(a.asset).toLowerCase() === this.chain.usdc.address.toLowerCase());
      if (!ours) throw new AppError('invalid_request', 'Unsupported payment requirement: no "exact" USDC requirement on our network', { reason: 'unsupported_requirement' });
      return { requirement: ours, resource: String(pr.resource?.url ?? ''), version: 2 };
    }
    return {
      requirement: {
        scheme: input.scheme!,
        network: input.network! as PaymentRequirements['network'],
        asset: input.asset!,
        amount: input.maxAmountRequired!,
        payTo: input.payTo!,
        maxTimeoutSeconds: input.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS,
        extra: input.extra ?? {},
      },
      resource: input.resource!,
      version: 1,
    };
  }

  /** The query of one of our own challenge URLs, or null for another server's resource. */
  private ownChallenge(resource: string): { to?: string; amount?: string; resource?: string } | null {
    const base = this.config.env.API_BASE_URL.replace(/\/$/, '') + CHALLENGE_PATH;
    if (!resource.startsWith(base)) return null;
    let url: URL;
    try {
      url = new URL(resource);
    } catch {
      return null;
    }
    return { to: url.searchParams.get('to') ?? undefined, amount: url.searchParams.get('amount') ?? undefined, resource };
  }

  private async terms(query: { to?: string; amount?: string; resource?: string }): Promise<ChallengeTerms> {
    const to = (query.to ?? this.config.env.X402_DEFAULT_PAY_TO).trim();
    if (!to) throw AppError.invalidParam('to', 'is required (this service has no X402_DEFAULT_PAY_TO)');
    const amountText = query.amount ?? this.config.env.X402_DEFAULT_AMOUNT;
    // Amount and payee are read as every payment reads them (PaymentsService); the challenge adds its minimum first.
    const amount = this.payments.parse(amountText);
    const min = parseAmount(this.config.env.X402_MIN_AMOUNT, this.config.maxAmountUnits);
    if (amount < min) throw AppError.invalidParam('amount', `must be at least ${this.config.env.X402_MIN_AMOUNT} USDC (the relayer pays the gas)`, { reason: 'below_minimum' });
    const { payee } = await this.payments.payTerms(to, amountText);
    const canonical = `${this.config.env.API_BASE_URL.replace(/\/$/, '')}${CHALLENGE_PATH}?to=${encodeURIComponent(payee.handle)}&amount=${formatAmount(amount)}`;
    return { payeeHandle: payee.handle, payTo: getAddress(payee.address), amount, resource: query.resource ?? canonical };
  }

  /**
   * The payment requirements of a challenge's terms, built by `@x402/core`'s `x402ResourceServer`
   * with `@x402/evm`'s exact scheme (DESIGN §14): the amount in USDC base units as decimal text,
   * `asset` USDC_ADDRESS, `extra` the token's EIP-712 domain read from the chain (once).
   */
  private async requirements(terms: ChallengeTerms): Promise<PaymentRequirements> {
    this.domain ??= this.chain.usdc.eip712Domain().then((d) => ({ name: String(d.name), version: String(d.version) }));
    const extra = await this.domain;
    const [requirements] = await (
      await this.resourceServer()
    ).buildPaymentRequirements({
      scheme: 'exact',
      network: this.caip2 as PaymentRequirements['network'],
      payTo: terms.payTo,
      price: { amount: terms.amount.toString(), asset: this.chain.usdc.address, extra },
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    });
    return requirements;
  }

  /**
   * `@x402/core`'s resource server for our one kind (exact, EIP-3009, this chain), with the service
   * as its own facilitator (DESIGN §14): it builds the requirements and the PAYMENT-REQUIRED
   * response; verification is {@link verify}, and settlement never goes through it: it is a relay
   * on the relayer queue (docs/architecture.md §5), so the facilitator's `settle` refuses.
   */
  private resourceServer(): Promise<x402ResourceServer> {
    this.server ??= (async () => {
      const facilitator: FacilitatorClient = {
        verify: (payload, requirements) => this.verify(payload, requirements),
        settle: () => Promise.reject(new Error('x402 settlement is a relay on the relayer queue (docs/architecture.md §5), not a facilitator call')),
        getSupported: () => Promise.resolve({ kinds: [{ x402Version: 2, scheme: 'exact', network: this.caip2 as PaymentRequirements['network'] }], extensions: [], signers: {} }),
      };
      const server = new x402ResourceServer(facilitator).register(this.caip2 as PaymentRequirements['network'], new ExactEvmServerScheme());
      await server.initialize();
      return server;
    })();
    return this.server;
  }

  /**
   * `@x402/evm`'s exact-scheme verification, as one chain read (DESIGN §22): the library answers a read
   * the node failed with "invalid", which is no verdict, so such a result is retried once at a fresh
   * head and then answered 503 `unavailable` (nothing reserved), never a 402 refusal.
   * @throws ChainUnavailableError when the node fails the verification's reads twice.
   */
  private verify(payload: PaymentPayload, requirements: PaymentRequirements): ReturnType<ExactEvmScheme['verify']> {
    return this.chain.read('x402 verification', async () => {
      const failed: unknown[] = [];
      const scheme = new ExactEvmScheme(ethersVerifySigner(this.chain.provider, this.chain.relayer.address, (err) => failed.push(err)) as never);
      const verified = await scheme.verify(payload, requirements);
      if (!verified.isValid && failed.length) throw failed[0];
      return verified;
    });
  }
}
