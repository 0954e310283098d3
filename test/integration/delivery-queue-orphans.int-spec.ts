import { Queue } from 'bullmq';
import Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { DeliveryJob, DeliveryQueue, WEBHOOK_DELIVERY_QUEUE } from '../../src/modules/webhooks/webhooks.queue';
import { deleteKeys } from '../support/services';

/**
 * Found by the fault soak (npm run soak): deleting a run's Redis keys while the relay adds jobs
 * can leave a job's hash without its list entry. Such a job is in no state BullMQ reports
 * ("unknown"), yet adding a job with the same id is a no-op, so the recovery pass re-added
 * nothing and the delivery stayed pending forever. ensure() must replace an orphaned job.
 */
describe('DeliveryQueue.ensure with an orphaned job hash (real Redis)', () => {
  const prefix = `${process.env.REDIS_PREFIX}orphan`;
  let queue: Queue<DeliveryJob>;
  let redis: Redis;

  beforeAll(() => {
    queue = new Queue<DeliveryJob>(WEBHOOK_DELIVERY_QUEUE, { connection: { url: process.env.REDIS_URL!, maxRetriesPerRequest: null }, prefix });
    redis = new Redis(process.env.REDIS_URL!);
  });
  afterAll(async () => {
    await queue.close();
    redis.disconnect();
    await deleteKeys(process.env.REDIS_URL!, prefix);
  });

  it('re-adds a job whose hash survived while its wait-list entry was deleted', async () => {
    const delivery = new DeliveryQueue(queue);
    const job = { deliveryId: randomUUID(), attempt: 0 };
    await delivery.enqueue([job]);
    expect(await queue.getJobState(job.deliveryId)).toBe('waiting');
    await redis.del(`${prefix}:${WEBHOOK_DELIVERY_QUEUE}:wait`); // the hash stays, the list entry is gone
    expect(await queue.getJobState(job.deliveryId)).toBe('unknown');
    expect(await redis.exists(`${prefix}:${WEBHOOK_DELIVERY_QUEUE}:${job.deliveryId}`)).toBe(1);

    expect(await delivery.ensure(job)).toBe(true);
    expect(await queue.getJobState(job.deliveryId)).toBe('waiting');
  });

  it('leaves a live job alone (no duplicate attempt)', async () => {
    const delivery = new DeliveryQueue(queue);
    const job = { deliveryId: randomUUID(), attempt: 0 };
    await delivery.enqueue([job]);
    expect(await delivery.ensure(job)).toBe(false);
    expect(await queue.getJobState(job.deliveryId)).toBe('waiting');
  });
});
