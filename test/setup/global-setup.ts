import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Wallet } from 'ethers';
import { migrate } from '../../src/database/migrate';
import { recreateDatabase } from '../support/services';
import { BASE_TEST_ENV, TEST_ENV_FILE } from './test-env';

type ChainLib = typeof import('../../libs/chain/src');

/**
 * Starts a real anvil and deploys our contracts with the compiled chain library (`npm test`
 * builds first; global setup runs outside jest's module mapper, so it cannot load @lib/* sources).
 * Mints 10 M test USDC to anvil accounts 4–9.
 */
async function startChain(): Promise<Record<string, string>> {
  const compiled = join(__dirname, '..', '..', 'dist', 'libs', 'chain', 'src', 'index.js');
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: run \`npm run build\` before the tests (npm test does)`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const chain = require(compiled) as ChainLib;
  const anvil = await chain.startAnvil({});
  (globalThis as { __ANVIL__?: { stop(): Promise<void> } }).__ANVIL__ = anvil;
  const provider = chain.createProvider(anvil.rpcUrl, chain.ANVIL_CHAIN_ID);
  try {
    const address = (role: Parameters<ChainLib['anvilKey']>[0]) => new Wallet(chain.anvilKey(role)).address;
    const deployed = await chain.deployLocalContracts({
      provider,
      deployerKey: chain.anvilKey('deployer'),
      termsSigner: address('termsSigner'),
      arbiter: address('arbiter'),
      mint: chain.ANVIL_KEYS.slice(4).map((key) => ({ to: new Wallet(key).address, amount: 10_000_000n * 1_000_000n })),
    });
    return {
      RPC_URL: anvil.rpcUrl,
      CHAIN_ID: String(chain.ANVIL_CHAIN_ID),
      USDC_ADDRESS: deployed.usdcAddress,
      ESCROW_ADDRESS: deployed.escrowAddress,
      ESCROW_DEPLOY_BLOCK: String(deployed.deployBlock),
      TERMS_SIGNER_PRIVATE_KEY: chain.anvilKey('termsSigner'),
      RELAYER_PRIVATE_KEY: chain.anvilKey('relayer'),
      ARBITER_PRIVATE_KEY: chain.anvilKey('arbiter'),
      ANVIL_PID: String(anvil.pid),
    };
  } finally {
    provider.destroy();
  }
}

/**
 * Runs once before the integration and e2e suites: drops and recreates the test database,
 * runs every migration, starts anvil with our contracts, and leaves the environment for test
 * files in .local/test-env.json. The database is TEST_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/pcp_test_<pid>, dropped
 * afterwards, so concurrent runs never share a database).
 */
export default async function globalSetup(): Promise<void> {
  const databaseUrl = process.env.TEST_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/pcp_test_${process.pid}`;
  await recreateDatabase(databaseUrl);
  await migrate(databaseUrl);
  const env: Record<string, string> = {
    ...BASE_TEST_ENV,
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `pcptest${process.pid}`,
    ...(await startChain()),
    ...(process.env.TEST_DATABASE_URL ? {} : { DROP_DATABASE_AFTER: '1' }),
  };
  mkdirSync(dirname(TEST_ENV_FILE), { recursive: true });
  writeFileSync(TEST_ENV_FILE, JSON.stringify(env, null, 2));
  process.env.PCP_TEST_ENV = JSON.stringify(env);
}
