import { Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { EscrowIndexer } from './escrow-indexer.service';
import { EscrowJobsProcessor } from './escrow-jobs.processor';

describe('EscrowJobsProcessor', () => {
  afterEach(() => jest.restoreAllMocks());

  it('logs a failed pass with its job name and rethrows it (BullMQ records the failure; the next iteration retries)', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const indexer = { pollOnce: () => Promise.reject(new Error('rpc unreachable')) } as unknown as EscrowIndexer;
    const processor = new EscrowJobsProcessor(indexer);
    await expect(processor.process({ name: 'index' } as Job)).rejects.toThrow('rpc unreachable');
    expect(errors).toHaveBeenCalledWith(expect.objectContaining({ job: 'index', err: 'rpc unreachable' }), expect.stringContaining('failed'));
  });

  it('returns what the pass returned', async () => {
    const indexer = { autoReleaseDue: () => Promise.resolve(['e1']) } as unknown as EscrowIndexer;
    await expect(new EscrowJobsProcessor(indexer).process({ name: 'auto-release' } as Job)).resolves.toEqual({ released: ['e1'] });
  });
});
