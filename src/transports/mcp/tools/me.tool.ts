import { Injectable } from '@nestjs/common';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { GET_ME } from '../../../modules/orgs/orgs.operations';

/** svc_me: GET /api/v1/me. */
@Injectable()
export class MeTool implements ServiceTool {
  readonly name = 'svc_me';
  readonly title = 'Who am I';
  readonly description = 'The calling credential: identity, organisation, scopes and verification status.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_ME;
  constructor(private readonly orgs: OrgsService) {}
  run(ctx: McpToolContext) {
    return this.orgs.me(ctx.principal);
  }
}
