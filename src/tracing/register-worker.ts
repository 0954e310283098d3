// Imported first by src/worker.ts: the SDK must patch http, express, pg, ioredis and pino before they load.
import { startTracing } from './tracing';

startTracing('payments-worker');
