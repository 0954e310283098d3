/**
 * Three tiers (docs/architecture.md, Conventions 12): unit specs beside the code, integration and e2e under test/ against
 * real Postgres, Redis and anvil. Run with Node >= 24.9 and --experimental-vm-modules (NestJS 12
 * is ESM-only; docs/decisions.md, "Node 24 from the lockfile").
 */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];
const common = {
  moduleFileExtensions: ['js', 'json', 'ts'],
  rootDir: '.',
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j)s$': swc },
  moduleNameMapper: { '^@lib/(.*)$': '<rootDir>/libs/$1/src', '^@pcp/sdk$': '<rootDir>/packages/sdk/src/index.ts' },
};
module.exports = {
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/setup/summary-reporter.js'],
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/architecture/**/*.spec.ts', '<rootDir>/libs/**/*.spec.ts', '<rootDir>/packages/*/src/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/test/**/*.int-spec.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
      setupFiles: ['<rootDir>/test/setup/env.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup/fund-relayer.ts'],
    },
  ],
};
