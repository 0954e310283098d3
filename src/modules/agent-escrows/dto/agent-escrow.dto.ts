import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { ListEnvelopeDto } from '../../../common/http/list.dto';

const TEMPLATES = ['freelance', 'physical', 'digital', 'custom'] as const;

/** POST /agent-escrows (docs/architecture.md §13): an escrow in the payee organisation with the agent's signer as buyer. */
export class CreateAgentEscrowDto {
  @ApiProperty({ description: 'Organisation handle of the seller', example: 'acme' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  to: string;

  @ApiProperty({ example: '25.00', description: 'USDC decimal text, > 0, ≤ MAX_AMOUNT' })
  @IsString()
  amount: string;

  @ApiProperty({ example: 'Logo design' })
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  description: string;

  @ApiPropertyOptional({ enum: TEMPLATES, default: 'custom' })
  @IsOptional()
  @IsIn(TEMPLATES as unknown as string[])
  escrowTemplateId?: (typeof TEMPLATES)[number];
}

/** Body of release and dispute (cancel takes none). */
export class AgentEscrowActionDto {
  @ApiPropertyOptional({ type: Boolean, description: 'Must be true on release and dispute (they move or lock money)' })
  @IsOptional()
  confirm?: unknown;
}

/** An agent escrow: the agent's Payment (mode escrow) and the checkout/escrow it funds. */
export class AgentEscrowDto {
  @ApiProperty({ format: 'uuid', description: 'The payment id (mode escrow)' }) id: string;
  @ApiProperty({ enum: ['pending', 'submitted', 'succeeded', 'failed'], description: 'The funding payment: succeeded once the escrow is funded on chain' }) status: string;
  @ApiProperty({ description: 'The seller: an organisation handle' }) to: string;
  @ApiProperty({ description: "The seller's payout address (the escrow's seller)" }) toAddress: string;
  @ApiProperty({ description: "The buyer: the agent's session signer, which funds the escrow" }) buyerAddress: string;
  @ApiProperty({ example: '25.00' }) amount: string;
  @ApiProperty({ format: 'uuid' }) checkoutSessionId: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'The escrow (GET /escrows/{id}), once the funding is indexed' }) escrowId: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The bytes32 escrow id on the contract, once the funding is indexed' }) escrowKey: string | null;
  @ApiProperty({ description: 'The checkout/escrow status (open until funded, then funded, accepted, delivered, released, …)' }) escrowStatus: string;
  @ApiProperty({ type: String, nullable: true }) txHash: string | null;
  @ApiProperty({ type: String, nullable: true }) failureReason: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class AgentEscrowListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [AgentEscrowDto] }) data: AgentEscrowDto[];
}

export class AgentEscrowActionResultDto {
  @ApiProperty() escrow: AgentEscrowDto;
  @ApiProperty({ description: 'The relayed …BySig transaction' }) txHash: string;
}
