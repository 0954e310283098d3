import { deleteKeys, dropDatabase } from '../support/services';
import { loadTestEnv } from './test-env';

/** Stops the run's anvil, removes this run's Redis keys (the prefix is per run) and its own database. */
export default async function globalTeardown(): Promise<void> {
  const env = loadTestEnv();
  const anvil = (globalThis as { __ANVIL__?: { stop(): Promise<void> } }).__ANVIL__;
  if (anvil) await anvil.stop();
  else if (env.ANVIL_PID) {
    try {
      process.kill(Number(env.ANVIL_PID));
    } catch {
      /* already gone */
    }
  }
  await deleteKeys(env.REDIS_URL, env.REDIS_PREFIX);
  if (env.DROP_DATABASE_AFTER) await dropDatabase(env.DATABASE_URL);
}
