import type { NextFunction, Request, Response } from 'express';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** The process's Prometheus registry (one per process: api or worker). */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

export const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request duration by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metricsRegistry],
});

/**
 * Records every request in {@link httpDuration}, labelled by the matched route template (not the
 * raw path). Plain Express middleware for `app.use` (not Nest's middleware module, whose
 * per-request wrapper cost more than this; docs/decisions.md, "The runner's cost").
 */
export function httpMetrics(req: Request, res: Response, next: NextFunction): void {
  const end = httpDuration.startTimer();
  res.once('finish', () => {
    const routePath = (req.route as { path?: string } | undefined)?.path;
    const route = routePath ? `${req.baseUrl}${routePath}` : 'unmatched';
    end({ method: req.method, route, status: String(res.statusCode) });
  });
  next();
}
