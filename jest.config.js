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
  setupFiles: ['<rootDir>/test/support/env.ts'],
  testTimeout: 30000,
};
