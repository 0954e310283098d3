import { type BaseWallet, Contract, Transaction } from 'ethers';
import { ChainTxError } from '../errors';
import { encodeFundWithAuthorization, type EscrowGateway, termsStruct } from '../escrow-gateway';
import type { FundingTerms, ReceiveAuthorization, SignedEscrowAction } from '../escrow-types';
import { ESCROW_IFACE, toTxError, USDC_IFACE } from '../tx-sender';

/** A signed, not yet broadcast relayer transaction (docs/architecture.md §5 recovery point "signed"). */
export interface SignedRelayTx {
  rawTx: string;
  txHash: string;
  nonce: number;
}

/**
 * Escrow funding and relayed actions sent straight from a wallet: what tests, the bench and the chaos
 * run do on the chain a buyer or a relayer would; the service itself funds and relays through its
 * relayer queue (src/chain/relayer). Not exported from `@lib/chain`: production code never imports
 * this folder (dependency-cruiser `no-testing-in-production`). Sends share the gateway's sender.
 */
export class EscrowTestSenders {
  constructor(private readonly gateway: EscrowGateway) {}

  private get sender() {
    return this.gateway.usdc.sender;
  }

  /**
   * Buyer approves (when the allowance is short) and calls fund(terms, termsSignature). Returns the fund
   * tx hash. Concurrent calls for one buyer run one after the other, so approvals do not race.
   */
  fundWithTerms(buyer: BaseWallet, terms: FundingTerms, termsSignature: string): Promise<string> {
    const { escrowAddress, usdc } = this.gateway;
    return this.sender.serialize(`fund:${buyer.address}`, async () => {
      const token = new Contract(usdc.address, USDC_IFACE, this.gateway.provider);
      const allowance = (await token.getFunction('allowance').staticCall(buyer.address, escrowAddress)) as bigint;
      if (allowance < terms.amount) {
        await this.sender.send(buyer, usdc.address, USDC_IFACE.encodeFunctionData('approve', [escrowAddress, terms.amount]), 'approve');
      }
      return this.sender.send(buyer, escrowAddress, ESCROW_IFACE.encodeFunctionData('fund', [termsStruct(terms), termsSignature]), 'fund');
    });
  }

  /** Gasless funding (docs/architecture.md §7): `buyer` signs the EIP-3009 authorization, `relayer` submits and pays gas. */
  async fundWithAuthorization(relayer: BaseWallet, buyer: BaseWallet, terms: FundingTerms, termsSignature: string): Promise<string> {
    const auth = await this.gateway.signReceiveAuthorization(buyer, terms);
    return this.submitFundWithAuthorization(relayer, terms, termsSignature, auth);
  }

  /** Relayer submits fundWithAuthorization with an authorization signed elsewhere (the pay page). */
  submitFundWithAuthorization(relayer: BaseWallet, terms: FundingTerms, termsSignature: string, auth: ReceiveAuthorization): Promise<string> {
    return this.sender.send(relayer, this.gateway.escrowAddress, encodeFundWithAuthorization(terms, termsSignature, auth), 'fundWithAuthorization');
  }

  /**
   * Signs (without broadcasting) the relayer's fundWithAuthorization transaction, so the caller can store
   * it before broadcasting and rebroadcast the same bytes on retry (docs/architecture.md §5). Uses `nonce` or the
   * relayer's pending nonce; broadcast it before sending anything else from the relayer.
   * Throws ChainTxError when the call would revert.
   */
  async signFundWithAuthorizationTx(
    relayer: BaseWallet,
    terms: FundingTerms,
    termsSignature: string,
    auth: ReceiveAuthorization,
    options: { nonce?: number } = {},
  ): Promise<SignedRelayTx> {
    const provider = this.gateway.provider;
    const signer = relayer.connect(provider);
    const to = this.gateway.escrowAddress;
    const data = encodeFundWithAuthorization(terms, termsSignature, auth);
    return this.sender.serialize(signer.address, async () => {
      const gasLimit = await this.sender.estimate(signer.address, to, data, 'fundWithAuthorization');
      const nonce = options.nonce ?? (await provider.getTransactionCount(signer.address, 'pending'));
      const populated = await signer.populateTransaction({ to, data, nonce, gasLimit });
      const rawTx = await signer.signTransaction(populated);
      return { rawTx, txHash: Transaction.from(rawTx).hash!, nonce };
    });
  }

  /**
   * Broadcasts a signed transaction (idempotent: an already known or mined hash is not an error) and
   * waits for it. Returns its hash; throws ChainTxError when the node refuses it or it reverts.
   */
  async broadcastSignedTx(rawTx: string): Promise<string> {
    const provider = this.gateway.provider;
    const hash = Transaction.from(rawTx).hash!;
    if (!(await provider.getTransactionReceipt(hash))) {
      try {
        await provider.broadcastTransaction(rawTx);
      } catch (err) {
        if (!(await provider.getTransaction(hash))) throw toTxError('broadcast', err, null);
      }
    }
    const receipt = await provider.waitForTransaction(hash);
    if (!receipt || receipt.status !== 1) {
      throw new ChainTxError(`broadcast: transaction ${hash} reverted`, null, [], null, hash);
    }
    return hash;
  }

  /** `submitter` (any account with gas, e.g. the relayer) sends a party's signed action. Returns the tx hash. */
  actBySig(submitter: BaseWallet, signed: SignedEscrowAction): Promise<string> {
    return this.sender.send(submitter, this.gateway.escrowAddress, this.gateway.encodeActBySig(signed), `${signed.action}BySig`);
  }
}
