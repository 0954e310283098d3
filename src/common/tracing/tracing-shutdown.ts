import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { shutdownTracing } from '../../tracing/tracing';

/** Exports the spans still buffered when the process shuts down (a no-op with tracing off; DESIGN §20). */
@Injectable()
export class TracingShutdown implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await shutdownTracing();
  }
}
