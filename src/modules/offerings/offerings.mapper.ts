import { formatAmount } from '@lib/money';
import { OfferingDto } from './dto/offering.dto';
import { Offering } from './offerings.entity';

/** Renders an offering as the API shows it (explicit field list, docs/architecture.md, Conventions 5). */
export function toOfferingDto(o: Offering): OfferingDto {
  return {
    id: o.id,
    name: o.name,
    description: o.description,
    amount: formatAmount(o.amountUnits),
    currency: 'USDC',
    escrowTemplateId: o.escrowTemplateId,
    active: o.active,
    metadata: o.metadata,
    createdAt: o.createdAt.toISOString(),
    updatedAt: o.updatedAt.toISOString(),
  };
}
