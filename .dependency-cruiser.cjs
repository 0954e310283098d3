/**
 * Architecture rules (docs/architecture.md, Conventions 13): libs never import src; a feature module never imports another
 * module's repository or entity; routes only in the api (http modules, controllers); no cycles;
 * tests and the chain testing senders are not imported by production code.
 */
module.exports = {
  forbidden: [
    {
      name: 'libs-not-to-src',
      severity: 'error',
      comment: 'libs/ are framework-light packages: they never import the application',
      from: { path: '^libs/' },
      to: { path: '^src/' },
    },
    {
      name: 'no-foreign-repository-or-entity',
      severity: 'error',
      comment: "a module reaches another module through its service, never its repository or entity",
      from: { path: '^src/modules/([^/]+)/' },
      to: {
        path: '^src/modules/([^/]+)/.+\\.(repository|entity)\\.ts$',
        pathNot: ['^src/modules/$1/'],
      },
    },
    {
      name: 'layers-point-down',
      severity: 'error',
      comment: 'the folders are a map (STYLE.md "Layout", DESIGN §17): common, database and config know no room above them; the kernel and the chain room name no domain and no transport; domain modules never import a transport',
      from: { path: '^src/(common|database|config|tracing)/' },
      to: { path: '^src/(kernel|chain|modules|transports)/' },
    },
    {
      name: 'kernel-and-chain-name-no-domain',
      severity: 'error',
      from: { path: '^src/(kernel|chain)/' },
      to: { path: '^src/(modules|transports)/' },
    },
    {
      name: 'domains-never-import-transports',
      severity: 'error',
      from: { path: '^src/modules/' },
      to: { path: '^src/transports/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { path: '^(src|libs)/' },
      to: { circular: true, viaOnly: { pathNot: '\\.entity\\.ts$' } },
    },
    {
      name: 'http-modules-only-in-the-api',
      severity: 'error',
      comment: 'a feature\'s routes live in its <feature>.http.module.ts, imported by the api module alone (docs/architecture.md §1: each process mounts only its own routes)',
      from: { path: '^src/', pathNot: '^src/app\\.module\\.ts$' },
      to: { path: '\\.http\\.module\\.ts$' },
    },
    {
      name: 'controllers-only-in-http-modules',
      severity: 'error',
      comment: 'a controller is registered by its feature\'s http module only (health is served by every process and keeps its own module)',
      from: { path: '^src/', pathNot: ['\\.http\\.module\\.ts$', '\\.controller\\.ts$', '^src/transports/health/'] },
      to: { path: '\\.controller\\.ts$' },
    },
    {
      name: 'no-routes-in-worker-or-cli',
      severity: 'error',
      comment: 'the worker serves health, metrics and Bull Board only, the CLI no HTTP at all: nothing they load may reach an api controller or http module',
      from: { path: '^src/(worker|cli)(\\.module)?\\.ts$' },
      to: { path: '\\.(controller|http\\.module)\\.ts$', pathNot: '^src/transports/health/', reachable: true },
    },
    {
      name: 'no-test-imports-in-production',
      severity: 'error',
      from: { path: '^(src|libs)/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^test/' },
    },
    {
      name: 'no-testing-in-production',
      severity: 'error',
      comment: "libs/chain/src/testing holds the senders with no production caller (issue 31): tests, bench and the chaos run only",
      from: { path: '^(src|libs)/', pathNot: ['\\.spec\\.ts$', '^libs/chain/src/testing/'] },
      to: { path: '^libs/chain/src/testing/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^dist/|\\.spec\\.ts$)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
