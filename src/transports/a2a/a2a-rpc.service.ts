import { Injectable } from '@nestjs/common';
import { DefaultRequestHandler } from '@a2a-js/sdk/server';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Principal } from '../../kernel/auth/principal';
import { A2A_RPC_PATH, A2aCardService } from './a2a-card.service';
import { A2aExecutor } from './a2a.executor';
import { A2aTasksService, PostgresTaskStore, PrincipalUser } from './a2a-tasks.service';

/**
 * The A2A JSON-RPC endpoint served by @a2a-js/sdk (docs/architecture.md §14): its
 * `DefaultRequestHandler` over our Postgres task store and {@link A2aExecutor}, behind its
 * `jsonRpcHandler` with the v0.3 compatibility layer on (`message/send`, `tasks/get` as well as
 * `SendMessage`, `GetTask`; a request without `A2A-Version` is 0.3). The caller is the principal our
 * auth guard resolved (`req.principal`), handed to the SDK as its `User`.
 */
@Injectable()
export class A2aRpcService {
  private readonly router: RequestHandler;

  constructor(card: A2aCardService, tasks: A2aTasksService, executor: A2aExecutor) {
    // No bus outlives its request (keepBusAliveStates: []): a follow-up message on an input-required
    // task loads it from Postgres on any replica, and an abandoned task holds no memory.
    const handler = new DefaultRequestHandler(card.card(), new PostgresTaskStore(tasks), executor, undefined, undefined, undefined, undefined, undefined, { keepBusAliveStates: [] });
    const outer = express.Router();
    outer.use(
      A2A_RPC_PATH,
      jsonRpcHandler({
        requestHandler: handler,
        userBuilder: (req) => Promise.resolve(new PrincipalUser((req as Request & { principal: Principal }).principal)),
        legacyCompat: { enabled: true },
      }),
    );
    this.router = outer;
  }

  /** Answers one POST /api/v1/a2a (already authenticated, body parsed). */
  handle(req: Request, res: Response, next: NextFunction): void {
    this.router(req, res, next);
  }
}
