import { startLocalService, type LocalService, type LocalServiceOptions } from '../../infra/local/local-service';
import { createApiKey } from '../../lib/keys/api-keys';
import { checkAgainstApiDocument } from './api-document';

export interface TestClient {
  url: () => string;
  /** A new key for the account (created if new). */
  keyFor: (account: string) => Promise<string>;
  call: (
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ) => Promise<{ status: number; headers: Headers; body: any }>;
}

type TestServiceOptions = Pick<LocalServiceOptions, 'chains' | 'chainsWithoutFollower'>;

/** The chains the API tests create webhooks on without a node: the service takes them as followed. */
export const CHAINS_WITHOUT_FOLLOWER = ['43114', '1'];

/**
 * The whole local service (embedded DynamoDB in memory + local gateway) on free ports for one test
 * file, driven over real HTTP. `env` adds to the settings it starts with (throttle limits, stage, ...);
 * its configuration is then this process's (runtimeConfig()).
 */
export function useLocalService(env: Record<string, string> = {}, options: TestServiceOptions | (() => TestServiceOptions) = {}): TestClient {
  let service: LocalService | undefined;
  beforeAll(async () => {
    const settings = {
      ...process.env,
      DYNAMODB_ENDPOINT: process.env.TEST_DYNAMODB_ENDPOINT,
      PAGE_TOKEN_KEY: undefined,
      STAGE: 'local',
      TABLE_NAME: 'webhooks-http-test',
      AUTHORIZER_CACHE_TTL_SECONDS: '0',
      ...env,
    };
    const given = typeof options === 'function' ? options() : options;
    const chainsWithoutFollower = [...CHAINS_WITHOUT_FOLLOWER, ...(given.chainsWithoutFollower ?? [])];
    service = await startLocalService({ env: settings, port: 0, host: '127.0.0.1', dynamoDbPort: 0, processes: 'this process', ...given, chainsWithoutFollower });
  });
  afterAll(async () => {
    await service?.close();
  });
  return {
    url: () => service!.url,
    keyFor: async (account) => (await createApiKey(account)).key,
    call: async (method, path, options = {}) => {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key !== undefined) headers['x-service-api-key'] = options.key;
      let body: string | undefined;
      if (options.body !== undefined) {
        body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${service!.url}${path}`, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // left as text: a test asserting JSON will fail on it
      }
      checkAgainstApiDocument(method, new URL(path, service!.url).pathname, response.status, parsed);
      return { status: response.status, headers: response.headers, body: parsed };
    },
  };
}
