import { Injectable } from '@nestjs/common';
import { Contract, getAddress, TypedDataEncoder, verifyTypedData } from 'ethers';
import { AppError } from '../../common/errors/app-error';
import { ChainAccess } from '../../chain/chain-access.service';

/** PayoutAddress{owner, handle, payoutAddress, deadline}: the payout address agrees to be `handle`'s payout address for `owner`. */
export const PAYOUT_ADDRESS_TYPES = {
  PayoutAddress: [
    { name: 'owner', type: 'address' },
    { name: 'handle', type: 'string' },
    { name: 'payoutAddress', type: 'address' },
    { name: 'deadline', type: 'uint256' },
  ],
};

/** The console's EIP-712 domain for payout proofs (no verifying contract: the service verifies). */
export function payoutProofDomain(chainId: number) {
  return { name: 'Payments Control Plane Console', version: '1', chainId };
}

/** A payout proof as the console request carries it. */
export interface PayoutProof {
  deadline: number;
  signature: string;
}

/** EIP-1271 `isValidSignature(bytes32,bytes)` magic value. */
const ERC1271_MAGIC = '0x1626ba7e';
const MAX_SECONDS = 3600;

/**
 * Proof that a payout address named in the console is its holder's (issue 28 item 4, DESIGN §19):
 * the signed-in address needs none; another address signs EIP-712 PayoutAddress (an EOA by
 * ecrecover; a contract wallet by EIP-1271 `isValidSignature`, one bounded eth_call). The proof is
 * bound to the handle, which becomes unique at creation, so it cannot serve twice. The operator CLI
 * is trusted and does not call this.
 */
@Injectable()
export class PayoutProofService {
  constructor(private readonly chain: ChainAccess) {}

  /**
   * @throws AppError 403 forbidden (`details.reason: "payout_address_proof_required"`, with the typed
   *   data to sign) when the proof is missing, expired, or not the payout address's; invalid_request
   *   for a malformed address.
   */
  async require(owner: string, handle: string, payoutAddress: string, proof: PayoutProof | undefined): Promise<void> {
    let payout: string;
    try {
      payout = getAddress(payoutAddress);
    } catch {
      throw AppError.invalidParam('payoutAddress', 'must be an address');
    }
    const ownerAddress = getAddress(owner);
    if (payout === ownerAddress) return;
    const now = Math.floor(Date.now() / 1000);
    const refuse = (problem?: string) =>
      new AppError('forbidden', 'A payout address other than the signed-in one must be proven by its own signature', {
        reason: 'payout_address_proof_required',
        ...(problem ? { problem } : {}),
        typedData: {
          domain: payoutProofDomain(this.chain.chainId),
          types: { EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }], ...PAYOUT_ADDRESS_TYPES },
          primaryType: 'PayoutAddress',
          message: { owner: ownerAddress, handle, payoutAddress: payout, deadline: now + 600 },
        },
      });
    if (!proof) throw refuse();
    if (!Number.isSafeInteger(proof.deadline) || proof.deadline < now || proof.deadline > now + MAX_SECONDS) throw refuse('expired');
    const message = { owner: ownerAddress, handle, payoutAddress: payout, deadline: BigInt(proof.deadline) };
    const domain = payoutProofDomain(this.chain.chainId);
    let recovered = '';
    try {
      recovered = getAddress(verifyTypedData(domain, PAYOUT_ADDRESS_TYPES, message, proof.signature));
    } catch {
      /* not an EOA signature; a contract wallet may still accept it */
    }
    if (recovered === payout) return;
    if ((await this.chain.provider.getCode(payout)) !== '0x') {
      const digest = TypedDataEncoder.hash(domain, PAYOUT_ADDRESS_TYPES, message);
      const wallet = new Contract(payout, ['function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)'], this.chain.provider);
      const answer = await (wallet.getFunction('isValidSignature')(digest, proof.signature) as Promise<string>).catch(() => '0x');
      if (answer.toLowerCase() === ERC1271_MAGIC) return;
    }
    throw refuse('bad_signature');
  }
}
