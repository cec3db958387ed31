/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  // Transpile only (types are checked once by `tsc --noEmit` in npm test). @middy/core ships ES
  // modules only, so it is transformed to CommonJS too.
  transform: {
    '^.+\\.(ts|js)$': [
      'ts-jest',
      { tsconfig: { target: 'ES2022', module: 'commonjs', allowJs: true, esModuleInterop: true, isolatedModules: true } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!@middy/)'],
  setupFiles: ['<rootDir>/test/support/env.ts', '<rootDir>/test/support/record-aws-calls.ts'],
  // The console built from its current sources before any test file runs: the tests that serve it and
  // the stack tests that upload it need console/dist. (console/ itself is outside roots: tsc -p console
  // checks its code, test/browser drives it.) And the AWS calls the tests record held against the
  // stack's grants once they have run (test/support/aws-calls.ts).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
};
