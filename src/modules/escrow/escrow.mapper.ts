import { Injectable } from '@nestjs/common';
import { formatAmount } from '@lib/money';
import { AppConfig } from '../../config/app-config';
import { EscrowDto } from './dto/escrow.dto';
import { Escrow, EscrowChainEventRow } from './escrow.entity';

/** Renders an escrow for one organisation (explicit field list, docs/architecture.md, Conventions 5). */
@Injectable()
export class EscrowMapper {
  constructor(private readonly config: AppConfig) {}

  toDto(e: Escrow, events: EscrowChainEventRow[], organizationId: string): EscrowDto {
    const isBuyer = e.buyerOrganizationId === organizationId;
    const isSeller = e.sellerOrganizationId === organizationId;
    return {
      id: e.id,
      status: e.status,
      role: isBuyer && isSeller ? 'buyer_and_seller' : isBuyer ? 'buyer' : 'seller',
      checkoutSessionId: e.checkoutSessionId,
      buyer: { address: e.buyerAddress, you: isBuyer },
      seller: { address: e.sellerAddress, you: isSeller },
      amount: formatAmount(e.amountUnits),
      currency: 'USDC',
      escrowTemplateId: e.escrowTemplateId,
      inspectionWindowSeconds: e.inspectionWindowSeconds,
      deliveredAt: e.deliveredAt?.toISOString() ?? null,
      autoReleaseAt: e.autoReleaseAt?.toISOString() ?? null,
      flag: e.flag ? { reason: e.flag, mismatches: e.flagDetails?.mismatches ?? [] } : null,
      chain: { chainId: this.config.env.CHAIN_ID, contract: this.config.env.ESCROW_ADDRESS, escrowKey: e.escrowKey },
      transactions: events.map((t) => ({
        action: t.action,
        txHash: t.txHash,
        blockNumber: t.blockNumber,
        from: t.fromAddress,
        recordedAt: t.createdAt.toISOString(),
      })),
      createdAt: e.createdAt.toISOString(),
      updatedAt: e.updatedAt.toISOString(),
    };
  }
}
