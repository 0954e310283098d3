import { randomBytes } from 'node:crypto';
import { loadTestEnv } from './test-env';

const env = loadTestEnv();
Object.assign(process.env, env);

// Every test file gets its own Redis prefix (its BullMQ queues and job schedulers) and its own relayer
// key (its nonces), on the run's one anvil and database (docs/decisions.md, "Test files are isolated").
// A worker or tender still running from an earlier file can then neither take this file's jobs nor
// send from the key whose nonces this file counts. The key is funded before the file's first test
// (test/setup/fund-relayer.ts). Both stay under the run's names, so global teardown still cleans up.
process.env.REDIS_PREFIX = `${env.REDIS_PREFIX}f${randomBytes(4).toString('hex')}`;
process.env.RELAYER_PRIVATE_KEY = `0x${randomBytes(32).toString('hex')}`;
