/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  // @middy/core ships ES modules only; swc turns them into CommonJS for jest's module system.
  transform: { '^.+\\.(ts|js)$': ['@swc/jest'] },
  transformIgnorePatterns: ['/node_modules/(?!@middy/)'],
  setupFiles: ['<rootDir>/test/support/env.ts'],
  testTimeout: 30000,
};
