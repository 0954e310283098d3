import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { ErrorBody } from '../../../common/errors/error-body';
import { PaymentDto } from '../../../modules/payments/dto/payment.dto';

/** `params` of POST /api/v1/a2a/payment-submitted (docs/api.md "Body of POST /api/v1/a2a/payment-submitted"). */
export class PaymentSubmittedParamsDto {
  @ApiProperty({ description: 'Payee: an agent slug (pays its signer) or an organisation handle (pays its payout address)', example: 'acme' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  to: string;

  @ApiProperty({ description: 'USDC decimal text, > 0, at most 6 decimals, ≤ MAX_AMOUNT', example: '5.00' })
  @IsString()
  amount: string;

  @ApiPropertyOptional({
    description: 'A2A task id (1–128 printable ASCII). One payment per agent and task: the same taskId with the same to and amount returns that payment (any Idempotency-Key); with other terms → 422 idempotency_conflict. The task is stored (Postgres, cached 24 h).',
    example: 'task-7f3c',
  })
  @IsOptional()
  @IsString()
  @Matches(/^[\x21-\x7e]{1,128}$/, { message: 'taskId must be 1–128 printable ASCII characters' })
  taskId?: string;
}

/** The JSON-RPC 2.0 request body of POST /api/v1/a2a/payment-submitted. */
export class PaymentSubmittedRequestDto {
  @ApiProperty({ enum: ['2.0'], description: 'Must be "2.0"' }) jsonrpc: string;
  @ApiProperty({ oneOf: [{ type: 'integer' }, { type: 'string' }], description: 'Request id, echoed in the response', example: 1 }) id: number | string;
  @ApiPropertyOptional({ enum: ['payment-submitted'], description: 'Optional; when present it must be "payment-submitted"' }) method?: string;
  @ApiProperty({ type: PaymentSubmittedParamsDto }) params: PaymentSubmittedParamsDto;
}

/** `result` of a successful payment-submitted. */
export class PaymentSubmittedResultDto {
  @ApiProperty({ type: PaymentDto, description: 'The Payment (mode "a2a", taskId set when given): submitted once broadcast, succeeded when used on chain' }) payment: PaymentDto;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: 'The A2A v1.0 task (status in a2a-x402 terms: working + payment-submitted, completed + payment-completed, failed + payment-failed); null without taskId',
  })
  task: Record<string, unknown> | null;
}

export class PaymentSubmittedResponseDto {
  @ApiProperty({ enum: ['2.0'] }) jsonrpc: string;
  @ApiProperty({ oneOf: [{ type: 'integer' }, { type: 'string' }] }) id: number | string;
  @ApiProperty({ type: PaymentSubmittedResultDto }) result: PaymentSubmittedResultDto;
}

export class JsonRpcErrorObjectDto {
  @ApiProperty({ description: '-32700 body not JSON, -32600 invalid envelope, -32601 unknown method, -32602 invalid params (and idempotency_required), -32603 internal, -32000 our refusals (401, 403, 409, 422, 429)', example: -32000 })
  code: number;
  @ApiProperty() message: string;
  @ApiProperty({ type: ErrorBody, description: 'Our error body {error, code, requestId, details?} (docs/architecture.md §4)' }) data: ErrorBody;
}

/** A JSON-RPC 2.0 error response; the HTTP status is our error's (docs/architecture.md §4). */
export class JsonRpcErrorResponseDto {
  @ApiProperty({ enum: ['2.0'] }) jsonrpc: string;
  @ApiProperty({ oneOf: [{ type: 'integer' }, { type: 'string' }], nullable: true, description: 'The request id, null when it could not be read' }) id: number | string | null;
  @ApiProperty({ type: JsonRpcErrorObjectDto }) error: JsonRpcErrorObjectDto;
}

/** Swagger schema of an A2A JSON-RPC request (the SDK validates the method and params). */
export const A2A_RPC_BODY = {
  type: 'object',
  additionalProperties: true,
  required: ['jsonrpc', 'method'],
  properties: {
    jsonrpc: { type: 'string', enum: ['2.0'] },
    id: { oneOf: [{ type: 'integer' }, { type: 'string' }] },
    method: { type: 'string', description: 'SendMessage, GetTask, ListTasks, CancelTask (A2A 1.0, header A2A-Version: 1.0) or message/send, tasks/get, tasks/cancel (0.3, the default)', example: 'SendMessage' },
    params: { type: 'object', additionalProperties: true },
  },
};

