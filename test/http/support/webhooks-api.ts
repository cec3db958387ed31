import { randomAccount, webhookInput } from '../../support/factories';
import type { TestClient } from '../../support/local-service';
import { UUID_PATTERN, type HttpResponse } from './expectations';

export type Query = Record<string, string | number | undefined>;

export function listPath(query: Query = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.append(name, String(value));
  return search.size ? `/v1/webhooks?${search}` : '/v1/webhooks';
}

export interface Page {
  ids: string[];
  nextPageToken?: string;
  /** Whether the body had a `nextPageToken` key at all (a last page must not). */
  hasTokenKey: boolean;
}

/** Calls to the webhook operations over HTTP, asserting the success status where a test needs only the result. */
export function webhooksApi(client: TestClient) {
  const call = client.call;

  async function create(key: string, overrides: Record<string, unknown> = {}) {
    const response = await call('POST', '/v1/webhooks', { key, body: webhookInput(overrides) });
    expect(response.status).toBe(201);
    return response.body;
  }

  async function get(key: string, id: string) {
    const response = await call('GET', `/v1/webhooks/${id}`, { key });
    expect(response.status).toBe(200);
    return response.body;
  }

  async function page(key: string, query: Query): Promise<Page> {
    const response = await call('GET', listPath(query), { key });
    expect(response.status).toBe(200);
    return {
      ids: response.body.webhooks.map((webhook: { id: string }) => webhook.id),
      nextPageToken: response.body.nextPageToken,
      hasTokenKey: 'nextPageToken' in response.body,
    };
  }

  return {
    call,
    url: client.url,
    keyFor: client.keyFor,
    create,
    get,
    page,

    /** A key for a new account, so that every test starts from an empty account. */
    newAccountKey: () => client.keyFor(randomAccount()),

    /** Creates `count` webhooks one after the other; returns their ids in creation order. */
    async createMany(key: string, count: number, overrides: Record<string, unknown> = {}): Promise<string[]> {
      const ids: string[] = [];
      for (let index = 0; index < count; index += 1) ids.push((await create(key, overrides)).id);
      return ids;
    },

    patch: (key: string, id: string, body: unknown): Promise<HttpResponse> =>
      call('PATCH', `/v1/webhooks/${id}`, { key, body }),

    /** Sends the webhook a test notification; answers its message id. */
    async sendTest(key: string, id: string): Promise<string> {
      const response = await call('POST', `/v1/webhooks/${id}/test`, { key });
      expect(response.status).toBe(202);
      expect(response.body.messageId).toMatch(UUID_PATTERN);
      return response.body.messageId;
    },

    /**
     * Follows nextPageToken to the end. `pageSizes[i]` is the size asked for page i (the last one
     * repeats); `beforePage(i)` runs before page i is fetched, for changes made between calls.
     */
    async pageThrough(
      key: string,
      options: { pageSizes?: number[]; status?: string; beforePage?: (index: number) => Promise<void> } = {},
    ): Promise<Page[]> {
      const pages: Page[] = [];
      let pageToken: string | undefined;
      do {
        const index = pages.length;
        await options.beforePage?.(index);
        const pageSize = options.pageSizes?.[Math.min(index, options.pageSizes.length - 1)];
        const next = await page(key, { pageSize, status: options.status, pageToken });
        pages.push(next);
        pageToken = next.nextPageToken;
        if (pages.length > 200) throw new Error('paging did not end');
      } while (pageToken !== undefined);
      return pages;
    },

    /** All ids the account lists, through every page. */
    async listAllIds(key: string, query: Query = {}): Promise<string[]> {
      const ids: string[] = [];
      let pageToken: string | undefined;
      do {
        const next = await page(key, { pageSize: 100, ...query, pageToken });
        ids.push(...next.ids);
        pageToken = next.nextPageToken;
      } while (pageToken !== undefined);
      return ids;
    },
  };
}
