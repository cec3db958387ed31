import { runtimeConfig } from '../../../lib/config/runtime';
import { randomAddress } from '../../support/factories';
import type { TestClient } from '../../support/local-service';
import type { HttpResponse } from './expectations';
import type { Query } from './webhooks-api';

export const addressesPath = (id: string, query: Query = {}): string => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.append(name, String(value));
  return search.size ? `/v1/webhooks/${id}/addresses?${search}` : `/v1/webhooks/${id}/addresses`;
};

/** `count` distinct random lower-case addresses. */
export const randomAddresses = (count: number): string[] => Array.from({ length: count }, randomAddress);

/** The address with its hexadecimal digits upper-cased (the `0x` stays: the API requires it lower-case). */
export const upperCased = (address: string): string => `0x${address.slice(2).toUpperCase()}`;

/** Address order: lower-case, sorted as strings. */
export const inAddressOrder = (addresses: string[]): string[] => [...new Set(addresses.map((address) => address.toLowerCase()))].sort();

export interface AddressPage {
  addresses: string[];
  totalAddresses: number;
  nextPageToken?: string;
  /** Whether the body had a `nextPageToken` key at all (a last page must not). */
  hasTokenKey: boolean;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Lowers the address limits for the tests of one describe block, restoring them after. The limits
 * are read from the environment once per process (runtimeConfig() caches what it read, and so does
 * the DynamoDB client), so a second useLocalService(env) in the same test file would not apply its
 * env: the process-wide config is changed here instead, as MAX_ADDRESSES_PER_CALL and
 * MAX_ADDRESSES_PER_WEBHOOK would have set it.
 */
export function useAddressLimits(limits: { perCall: number; perWebhook: number }): void {
  let saved: { perCall: number; perWebhook: number } | undefined;
  beforeAll(() => {
    const current = runtimeConfig().addressLimits;
    saved = { ...current };
    Object.assign(current, limits);
  });
  afterAll(() => {
    if (saved) Object.assign(runtimeConfig().addressLimits, saved);
  });
}

/** Calls to a webhook's addresses operations over HTTP. */
export function addressesApi(client: TestClient) {
  const call = client.call;

  const add = (key: string, id: string, addresses: unknown): Promise<HttpResponse> =>
    call('PATCH', addressesPath(id), { key, body: { addresses } });

  const remove = (key: string, id: string, addresses: unknown): Promise<HttpResponse> =>
    call('DELETE', addressesPath(id), { key, body: { addresses } });

  const list = (key: string, id: string, query: Query = {}): Promise<HttpResponse> => call('GET', addressesPath(id, query), { key });

  async function page(key: string, id: string, query: Query = {}): Promise<AddressPage> {
    const response = await list(key, id, query);
    expect(response.status).toBe(200);
    return { ...response.body, hasTokenKey: 'nextPageToken' in response.body };
  }

  /** Every page, following nextPageToken to the end; `beforePage(i)` runs before page i is fetched. */
  async function pageThrough(
    key: string,
    id: string,
    options: { pageSize?: number; beforePage?: (index: number) => Promise<void> } = {},
  ): Promise<AddressPage[]> {
    const pages: AddressPage[] = [];
    let pageToken: string | undefined;
    do {
      await options.beforePage?.(pages.length);
      const next = await page(key, id, { pageSize: options.pageSize, pageToken });
      pages.push(next);
      pageToken = next.nextPageToken;
      if (pages.length > 20_000) throw new Error('paging did not end');
    } while (pageToken !== undefined);
    return pages;
  }

  return {
    add,
    remove,
    list,
    page,
    pageThrough,

    /** Adds, asserting 200; returns the webhook. */
    async added(key: string, id: string, addresses: string[]) {
      const response = await add(key, id, addresses);
      expect(response.status).toBe(200);
      return response.body;
    },

    /** Removes, asserting 200; returns the webhook. */
    async removed(key: string, id: string, addresses: string[]) {
      const response = await remove(key, id, addresses);
      expect(response.status).toBe(200);
      return response.body;
    },

    /** Every address of the webhook, through every page of 100. */
    async listAll(key: string, id: string): Promise<string[]> {
      return (await pageThrough(key, id, { pageSize: 100 })).flatMap((next) => next.addresses);
    },

    /** The webhook's totalAddresses, from a one-address page. */
    async total(key: string, id: string): Promise<number> {
      return (await page(key, id, { pageSize: 1 })).totalAddresses;
    },

    /**
     * A change retried while it answers 503 (another change held the webhook's lease for longer than
     * the call waits), at most `attempts` times; returns the last response and how many 503s it met.
     */
    async retryingOn503(send: () => Promise<HttpResponse>, attempts = 5): Promise<{ response: HttpResponse; unavailable: number }> {
      let unavailable = 0;
      for (;;) {
        const response = await send();
        if (response.status !== 503 || unavailable + 1 >= attempts) return { response, unavailable };
        expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
        unavailable += 1;
        await sleep(100 + Math.random() * 200);
      }
    },
  };
}
