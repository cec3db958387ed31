import type { TestClient } from '../../support/local-service';

export interface CreatedApiKey {
  key: string;
  keyId: string;
  createdAt: number;
  current: boolean;
}

/**
 * Calls to the API key operations over HTTP; `created` asserts the 201 where a test needs only the
 * new key, and hands the key to `onCreated`.
 */
export function apiKeysApi(client: TestClient, onCreated: (key: string) => void = () => undefined) {
  const create = (key: string, body?: unknown) => client.call('POST', '/v1/apiKeys', { key, body });
  return {
    list: (key: string, query = '') => client.call('GET', `/v1/apiKeys${query}`, { key }),
    create,
    revoke: (key: string, keyId: string) => client.call('DELETE', `/v1/apiKeys/${keyId}`, { key }),

    async created(key: string): Promise<CreatedApiKey> {
      const response = await create(key);
      expect(response.status).toBe(201);
      onCreated(response.body.key);
      return response.body;
    },
  };
}
