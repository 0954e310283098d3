import { Body, Controller, Get, Header, Headers, HttpCode, Next, Post, Req, Res, UseFilters } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiExtraModels,
  ApiForbiddenResponse,
  ApiHeader,
  ApiInternalServerErrorResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { CurrentPrincipal, Public, RequireScopes } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { AppError } from '../../common/errors/app-error';
import { Runs } from '../../kernel/http';
import { validateInput } from '../../kernel/validate';
import { SPEND_REFUSALS } from '../../modules/payments/payments.controller';
import { A2aCardService } from './a2a-card.service';
import { JSON_RPC, JsonRpcError, JsonRpcExceptionFilter } from './a2a-jsonrpc.filter';
import { A2aPaymentsService } from './a2a-payments.service';
import { A2aRpcService } from './a2a-rpc.service';
import { SUBMIT_A2A_PAYMENT } from './a2a.operations';
import { A2A_RPC_BODY, JsonRpcErrorResponseDto, PaymentSubmittedParamsDto, PaymentSubmittedRequestDto, PaymentSubmittedResponseDto } from './dto/a2a.dto';

const CARD_DOC = {
  summary: 'The A2A agent card (A2A v1.0 AgentCard; also at /.well-known/agent.json and /.well-known/agent-card.json)',
  description:
    'supportedInterfaces lists the JSON-RPC endpoint {API_BASE_URL}/api/v1/a2a at protocol versions 1.0 and 0.3; skills pay and create-checkout; capabilities.extensions declares a2a-x402. The v0.3 fields url, preferredTransport and protocolVersion are included for pre-1.0 readers.',
};
const CARD_SCHEMA = { schema: { type: 'object', additionalProperties: true, required: ['name', 'supportedInterfaces', 'skills'] } };

/** The agent card at its three paths (docs/architecture.md §14); public, identical JSON. */
@ApiTags('a2a')
@Controller()
export class A2aCardController {
  constructor(private readonly card: A2aCardService) {}

  @Get('api/v1/a2a/agent-card')
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation(CARD_DOC)
  @ApiOkResponse({ description: 'The agent card', ...CARD_SCHEMA })
  @ApiStandardErrors()
  agentCard(): Record<string, unknown> {
    return this.card.json();
  }

  @Get('.well-known/agent-card.json')
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ summary: 'The A2A agent card at the A2A 0.3/1.0 well-known path (same JSON as GET /api/v1/a2a/agent-card)' })
  @ApiOkResponse({ description: 'The agent card', ...CARD_SCHEMA })
  @ApiStandardErrors()
  wellKnownAgentCard(): Record<string, unknown> {
    return this.card.json();
  }

  @Get('.well-known/agent.json')
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ summary: 'The A2A agent card at the pre-0.3 well-known path (same JSON as GET /api/v1/a2a/agent-card)' })
  @ApiOkResponse({ description: 'The agent card', ...CARD_SCHEMA })
  @ApiStandardErrors()
  wellKnownAgentJson(): Record<string, unknown> {
    return this.card.json();
  }
}

/**
 * The A2A JSON-RPC routes (docs/architecture.md §14): the SDK-served endpoint and our
 * payment-submitted. Every error, authentication included, answers as a JSON-RPC error response.
 */
@ApiTags('a2a')
@Controller('api/v1/a2a')
@UseFilters(JsonRpcExceptionFilter)
@ApiExtraModels(JsonRpcErrorResponseDto)
export class A2aRpcController {
  constructor(
    private readonly rpc: A2aRpcService,
    private readonly payments: A2aPaymentsService,
  ) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'A2A JSON-RPC endpoint (served by @a2a-js/sdk)',
    description:
      'A2A 1.0 methods (SendMessage, GetTask, ListTasks, CancelTask; header A2A-Version: 1.0) and their 0.3 names (message/send, tasks/get, tasks/cancel; the default without A2A-Version). ' +
      'Tasks are stored in Postgres per credential. Skills: pay (agent key with agent:pay; a2a-x402 states) and create-checkout (merchant credential with checkout:write). ' +
      'A2A errors are JSON-RPC errors with HTTP 200 (the SDK convention); authentication failures answer 401 with a JSON-RPC error.',
  })
  @ApiHeader({ name: 'A2A-Version', required: false, description: '"1.0" or "0.3" (default 0.3)' })
  @ApiBody({ schema: A2A_RPC_BODY })
  @ApiOkResponse({ description: 'A JSON-RPC response: {jsonrpc, id, result} or {jsonrpc, id, error}', schema: { type: 'object', additionalProperties: true } })
  @ApiBadRequestResponse({ description: 'invalid_request: body not JSON (-32700), over 100 kB or with a NUL character (-32600)', type: JsonRpcErrorResponseDto })
  @ApiUnauthorizedResponse({ description: 'unauthorized: missing or invalid credential (JSON-RPC error, data = our error body)', type: JsonRpcErrorResponseDto })
  @ApiTooManyRequestsResponse({ description: 'rate_limited', type: JsonRpcErrorResponseDto })
  @ApiInternalServerErrorResponse({ description: 'internal (JSON-RPC -32603)', schema: { type: 'object', additionalProperties: true } })
  @RequireScopes()
  jsonRpc(@Req() req: Request, @Res() res: Response, @Next() next: NextFunction): void {
    this.rpc.handle(req, res, next);
  }

  @Post('payment-submitted')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Pay a peer agent or merchant over A2A (JSON-RPC 2.0 envelope)',
    description:
      'Pays params.to params.amount as a Payment mode "a2a" under the agent policy (as POST /payments: reservation under the agent row lock, EIP-3009 by the session signer, relayer). ' +
      'params.taskId is stored on the payment, one payment per agent and task. Success: {jsonrpc, id, result: {payment, task}}. Errors: our HTTP status with {jsonrpc, id, error: {code, message, data}}, data = our error body.',
  })
  @ApiBody({ type: PaymentSubmittedRequestDto })
  @ApiOkResponse({ type: PaymentSubmittedResponseDto })
  @ApiBadRequestResponse({
    description:
      'JSON-RPC -32600 (jsonrpc not "2.0", id missing or not an integer/string, params not an object), -32601 (method other than payment-submitted), -32602 (invalid params, idempotency_required); -32700 for a body that is not JSON, -32600 over 100 kB or with a NUL character',
    type: JsonRpcErrorResponseDto,
  })
  @ApiUnauthorizedResponse({ description: 'unauthorized (JSON-RPC -32000)', type: JsonRpcErrorResponseDto })
  @ApiForbiddenResponse({ description: `JSON-RPC -32000 with data.code: ${SPEND_REFUSALS}`, type: JsonRpcErrorResponseDto })
  @ApiUnprocessableEntityResponse({ description: 'idempotency_conflict: this key or this taskId was used for a different payment (JSON-RPC -32000)', type: JsonRpcErrorResponseDto })
  @ApiTooManyRequestsResponse({ description: 'rate_limited', type: JsonRpcErrorResponseDto })
  @Runs(SUBMIT_A2A_PAYMENT)
  async paymentSubmitted(@CurrentPrincipal() p: Principal, @Body() body: unknown, @Headers('idempotency-key') key?: string) {
    const { id, params } = await readEnvelope(body);
    const work = this.payments.submitWork(p, { to: params.to, amount: params.amount, ...(params.taskId !== undefined ? { taskId: params.taskId } : {}) }, key);
    return { ...work, resume: async (row: unknown) => ({ jsonrpc: '2.0', id, result: (await work.resume(row)) as PaymentSubmittedResponseDto['result'] }) };
  }
}

/**
 * Validates the JSON-RPC 2.0 envelope of payment-submitted (jsonrpc.org/specification §4).
 * @throws JsonRpcError -32600 (envelope), -32601 (method), -32602 (params, with details.fields).
 */
async function readEnvelope(body: unknown): Promise<{ id: number | string; params: PaymentSubmittedParamsDto }> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new JsonRpcError(JSON_RPC.invalidRequest, 'The body must be a JSON-RPC 2.0 request object');
  const b = body as Record<string, unknown>;
  const fields: Array<{ param: string; message: string }> = [];
  if (b.jsonrpc !== '2.0') fields.push({ param: 'jsonrpc', message: 'must be "2.0"' });
  if (!(typeof b.id === 'string' || (typeof b.id === 'number' && Number.isSafeInteger(b.id)))) fields.push({ param: 'id', message: 'must be an integer or a string' });
  if (!b.params || typeof b.params !== 'object' || Array.isArray(b.params)) fields.push({ param: 'params', message: 'must be an object' });
  const extra = Object.keys(b).filter((k) => !['jsonrpc', 'id', 'method', 'params'].includes(k));
  for (const k of extra) fields.push({ param: k, message: 'is not a JSON-RPC request member' });
  if (fields.length > 0) throw new JsonRpcError(JSON_RPC.invalidRequest, `Invalid JSON-RPC request: ${fields.map((f) => `${f.param} ${f.message}`).join('; ')}`, { fields });
  if (b.method !== undefined && b.method !== 'payment-submitted') {
    throw new JsonRpcError(JSON_RPC.methodNotFound, 'method must be "payment-submitted" when present', { fields: [{ param: 'method', message: 'must be "payment-submitted"' }] });
  }
  let params: PaymentSubmittedParamsDto;
  try {
    params = await validateInput(PaymentSubmittedParamsDto, b.params);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
    // The kernel's validation; JSON-RPC names the fields under `params` and answers -32602.
    const paramFields = ((err.details?.fields ?? []) as Array<{ param: string; message: string }>).map((f) => ({ ...f, param: `params.${f.param}` }));
    throw new JsonRpcError(JSON_RPC.invalidParams, paramFields.map((f) => `${f.param}: ${f.message}`).join('; '), { fields: paramFields });
  }
  return { id: b.id as number | string, params };
}
