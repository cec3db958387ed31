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
  // Two files at once, also on two cores: most of a file's time is spent waiting on sockets, timers
  // and the store (jest's default there is one). `npm test` runs test/process apart, one file at a
  // time: each starts `npm start`'s processes, and two of them at once starve each other.
  maxWorkers: 2,
};
