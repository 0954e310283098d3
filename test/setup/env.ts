import { loadTestEnv } from './test-env';

Object.assign(process.env, loadTestEnv());
