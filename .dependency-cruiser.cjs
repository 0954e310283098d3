/**
 * Architecture rules (STYLE §13): libs never import src; a feature module never imports another
 * module's repository or entity; no cycles; tests are not imported by production code.
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
      name: 'no-circular',
      severity: 'error',
      from: { path: '^(src|libs)/' },
      to: { circular: true, viaOnly: { pathNot: '\\.entity\\.ts$' } },
    },
    {
      name: 'no-test-imports-in-production',
      severity: 'error',
      from: { path: '^(src|libs)/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^test/' },
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
