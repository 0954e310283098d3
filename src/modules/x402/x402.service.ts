import { Injectable, Logger } from '@nestjs/common';
import { ChainTxError } from '@lib/chain';
import { AmountFormatError, formatAmount, parseAmount } from '@lib/money';
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { EVM_NETWORK_CHAIN_ID_MAP } from '@x402/evm/v1';
import { getAddress } from 'ethers';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../../common/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { AgentSpendGate } from '../agents/agent-spend.service';
import { PaymentsService } from '../payments/payments.service';
import { ChainAccess } from '../relayer/chain-access.service';
import { RelayerService } from '../relayer/relayer.service';
import { ethersVerifySigner } from './evm-facilitator-signer';

/** The longest validity a challenge offers (and our signer signs): docs/architecture.md §13, 10 minutes. */
const MAX_TIMEOUT_SECONDS = 600;
const CHALLENGE_PATH = '/api/v1/x402/challenge';

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

/** POST /x402/settle's body: one v1 `accepts` entry as it is, or a PAYMENT-REQUIRED header value. */
export type X402SettleInput = { paymentRequired: string } | Record<string, unknown>;

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
  private verifier?: ExactEvmScheme;

  constructor(
    private readonly config: AppConfig,
    private readonly chain: ChainAccess,
    private readonly agents: AgentSpendGate,
    private readonly relayer: RelayerService,
    private readonly payments: PaymentsService,
    private readonly txHost: TransactionHost,
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
    const paymentRequired: PaymentRequired = {
      x402Version: 2,
      error: 'PAYMENT-SIGNATURE header is required',
      resource: { url: terms.resource, description, mimeType: 'application/json' },
      accepts: [requirements],
    };
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
   * A retry of a challenge URL carrying a payment (`PAYMENT-SIGNATURE` v2, or `X-PAYMENT`): verified
   * against the requirements re-derived from the URL, reserved by (payer, nonce), settled through the
   * relayer queue. A refused payment answers 402 with `error` and moves no money.
   * @throws AppError 400 for a malformed challenge query (as {@link challenge}).
   */
  async paid(query: { to?: string; amount?: string; resource?: string }, header: string): Promise<X402HttpAnswer> {
    const terms = await this.terms(query);
    const requirements = await this.requirements(terms);
    const refuse = (error: string, reason: string): X402HttpAnswer => ({
      status: 402,
      headers: { 'Cache-Control': 'no-store' },
      body: { x402Version: 2, error, reason, accepts: [requirements] },
    });
    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(header);
    } catch {
      return refuse('The payment header is not a base64 JSON x402 payment payload', 'invalid_payload');
    }
    if (payload.x402Version !== 2) return refuse(`x402 v1 payments need a named network; this chain is ${this.caip2}: pay with x402 v2 (PAYMENT-SIGNATURE)`, 'unsupported_version');
    const claimed = (payload.payload as { authorization?: { from?: unknown; nonce?: unknown } }).authorization;
    if (typeof claimed?.from === 'string' && typeof claimed.nonce === 'string') {
      const used: unknown[] = await this.em().query(`SELECT 1 FROM x402_settlements WHERE payer = $1 AND nonce = $2`, [claimed.from.toLowerCase(), claimed.nonce.toLowerCase()]);
      if (used.length) return refuse('This payment was already used: one payment buys one response', 'payment_already_used');
    }
    const verified = await this.verifierScheme().verify(payload, requirements);
    if (!verified.isValid) return refuse(verified.invalidMessage ?? verified.invalidReason ?? 'The payment does not verify', verified.invalidReason ?? 'invalid_payment');
    const auth = (payload.payload as { authorization: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string }; signature: string }).authorization;
    const signature = (payload.payload as { signature: string }).signature;
    const id = uuidv7();
    const reserved: unknown[] = await this.em().query(
      `INSERT INTO x402_settlements (id, payer, nonce, pay_to, payee_handle, amount, resource, status)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'reserved') ON CONFLICT (payer, nonce) DO NOTHING RETURNING id`,
      [id, auth.from.toLowerCase(), auth.nonce.toLowerCase(), terms.payTo, terms.payeeHandle, auth.value, terms.resource],
    );
    if (reserved.length !== 1) return refuse('This payment was already used: one payment buys one response', 'payment_already_used');
    try {
      const data = this.chain.gateway.encodeTransferWithAuthorization({
        from: auth.from,
        to: auth.to,
        value: BigInt(auth.value),
        validAfter: BigInt(auth.validAfter),
        validBefore: BigInt(auth.validBefore),
        nonce: auth.nonce,
        signature,
      });
      const { txHash } = await this.relayer.relay({ to: this.chain.gateway.usdcAddress, data, purpose: 'x402', reference: id });
      const receipt = await this.chain.provider.waitForTransaction(txHash, 1, 60_000);
      if (!receipt || receipt.status !== 1) throw new ChainTxError(`x402 settlement ${txHash} reverted`, null, [], null, txHash);
      await this.em().query(`UPDATE x402_settlements SET status = 'settled', tx_hash = $2, updated_at = now() WHERE id = $1`, [id, txHash]);
      const settlement = { success: true, transaction: txHash, network: this.caip2 as PaymentRequirements['network'], payer: getAddress(auth.from) };
      return {
        status: 200,
        headers: { 'PAYMENT-RESPONSE': encodePaymentResponseHeader(settlement), 'Cache-Control': 'no-store' },
        body: { paid: true, resource: terms.resource, payTo: terms.payTo, amount: formatAmount(terms.amount), settlement },
      };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.logger.warn({ settlementId: id, error: message }, 'x402 settlement failed');
      await this.em().query(`UPDATE x402_settlements SET status = 'failed', error = $2, updated_at = now() WHERE id = $1`, [id, message.slice(0, 500)]);
      return refuse('The payment could not be settled on chain', 'settlement_failed');
    }
  }

  /**
   * POST /x402/settle for an agent (docs/architecture.md §14): the policy decides (§13 order), the
   * session signer signs an EIP-3009 transferWithAuthorization with the token's own domain.
   * @returns `{payment, settlement}` for our own challenges (settled on chain), `{payment, header}` for another server's.
   * @throws AppError 400 `unsupported_requirement` (scheme, network or asset not ours), 400 for a
   *   malformed body, 403 refusals of §13, 422 idempotency_conflict.
   */
  async settle(principal: Principal, input: X402SettleInput, key: string | undefined): Promise<Record<string, unknown>> {
    const { requirement, resource, version } = this.readRequirement(input);
    const unsupported = (why: string) => new AppError('invalid_request', `Unsupported payment requirement: ${why}`, { reason: 'unsupported_requirement' });
    if (requirement.scheme !== 'exact') throw unsupported('only scheme "exact" is signed');
    if (requirement.network !== this.caip2 && requirement.network !== this.v1Network) throw unsupported(`only network ${this.caip2} is signed`);
    if (String(requirement.asset).toLowerCase() !== this.chain.gateway.usdcAddress.toLowerCase()) throw unsupported('only our USDC is signed');
    if (!/^\d{1,78}$/.test(String(requirement.amount)) || BigInt(requirement.amount) <= 0n) throw unsupported('amount must be positive base units');
    const amount = BigInt(requirement.amount);
    const own = this.ownChallenge(resource);
    if (own) {
      const terms = await this.terms(own);
      if (terms.payTo.toLowerCase() !== String(requirement.payTo).toLowerCase() || terms.amount !== amount) {
        throw unsupported('it does not match the challenge it names (payTo or amount differ)');
      }
      const payment = await this.payments.spend(principal, { to: terms.payeeHandle, amount: formatAmount(amount), mode: 'x402' }, key, { path: '/api/v1/x402/settle', extra: { resource } });
      const dto = this.payments.toDto(payment);
      return { payment: dto, settlement: { success: payment.status === 'submitted' || payment.status === 'succeeded', transaction: payment.txHash ?? payment.relayTxHashes.at(-1) ?? null, network: this.caip2, payer: payment.fromAddress } };
    }
    const payment = await this.payments.spend(principal, { to: String(requirement.payTo), amount: formatAmount(amount), mode: 'x402' }, key, {
      path: '/api/v1/x402/settle',
      extra: { resource },
      payToAddress: true,
    });
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

  /** The requirement in a settle body: a v1 `accepts` entry, or the first acceptable entry of a v2 PAYMENT-REQUIRED value. */
  private readRequirement(input: X402SettleInput): { requirement: PaymentRequirements; resource: string; version: 1 | 2 } {
    if (typeof (input as { paymentRequired?: unknown }).paymentRequired === 'string') {
      let pr: PaymentRequired;
      try {
        pr = decodePaymentRequiredHeader((input as { paymentRequired: string }).paymentRequired);
      } catch {
        throw AppError.invalidParam('paymentRequired', 'is not a PAYMENT-REQUIRED header value (base64 JSON)');
      }
      const accepts = Array.isArray(pr.accepts) ? pr.accepts : [];
      const ours = accepts.find((a) => a.scheme === 'exact' && a.network === this.caip2 && String(a.asset).toLowerCase() === this.chain.gateway.usdcAddress.toLowerCase());
      if (!ours) throw new AppError('invalid_request', 'Unsupported payment requirement: no "exact" USDC requirement on our network', { reason: 'unsupported_requirement' });
      return { requirement: ours, resource: String(pr.resource?.url ?? ''), version: 2 };
    }
    const v1 = input as Record<string, unknown>;
    for (const field of ['scheme', 'network', 'maxAmountRequired', 'payTo', 'asset', 'resource']) {
      if (typeof v1[field] !== 'string' || !(v1[field] as string).length) throw AppError.invalidParam(field, 'is required (a v1 accepts entry) unless paymentRequired is given');
    }
    return {
      requirement: {
        scheme: v1.scheme as string,
        network: v1.network as PaymentRequirements['network'],
        asset: v1.asset as string,
        amount: v1.maxAmountRequired as string,
        payTo: v1.payTo as string,
        maxTimeoutSeconds: Number(v1.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS),
        extra: (v1.extra as Record<string, unknown>) ?? {},
      },
      resource: v1.resource as string,
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
    let amount: bigint;
    try {
      amount = parseAmount(amountText, this.config.maxAmountUnits);
    } catch (err) {
      if (err instanceof AmountFormatError) throw AppError.invalidParam('amount', err.message);
      throw err;
    }
    const min = parseAmount(this.config.env.X402_MIN_AMOUNT, this.config.maxAmountUnits);
    if (amount < min) throw AppError.invalidParam('amount', `must be at least ${this.config.env.X402_MIN_AMOUNT} USDC (the relayer pays the gas)`, { reason: 'below_minimum' });
    const payee = await this.agents.resolveHandle(to);
    if (!payee) throw AppError.invalidParam('to', 'is not a known organisation handle or agent slug', { reason: 'unknown_payee' });
    if (!payee.address) throw new AppError('invalid_request', `${to} has no payout address`, { reason: 'no_payout_address', fields: [{ param: 'to', message: 'has no payout address' }] });
    const canonical = `${this.config.env.API_BASE_URL.replace(/\/$/, '')}${CHALLENGE_PATH}?to=${encodeURIComponent(payee.handle)}&amount=${formatAmount(amount)}`;
    return { payeeHandle: payee.handle, payTo: getAddress(payee.address), amount, resource: query.resource ?? canonical };
  }

  private async requirements(terms: ChallengeTerms): Promise<PaymentRequirements> {
    this.domain ??= this.chain.gateway.usdcEip712Domain().then((d) => ({ name: String(d.name), version: String(d.version) }));
    return {
      scheme: 'exact',
      network: this.caip2 as PaymentRequirements['network'],
      asset: this.chain.gateway.usdcAddress,
      amount: terms.amount.toString(),
      payTo: terms.payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra: await this.domain,
    };
  }

  private verifierScheme(): ExactEvmScheme {
    this.verifier ??= new ExactEvmScheme(ethersVerifySigner(this.chain.provider, this.chain.relayer.address) as never);
    return this.verifier;
  }

  private em() {
    return (this.txHost as TxHost).tx;
  }
}
