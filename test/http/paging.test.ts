import { useLocalService } from '../support/local-service';
import { expectError } from './support/expectations';
import { type Page, webhooksApi } from './support/webhooks-api';

const api = webhooksApi(useLocalService());

const INVALID_PAGE_TOKEN = /^Invalid pageToken/;

const pageLengths = (pages: Page[]) => pages.map((page) => page.ids.length);
const tokenKeys = (pages: Page[]) => pages.map((page) => page.hasTokenKey);
const allIds = (pages: Page[]) => pages.flatMap((page) => page.ids);

/** The token with the character at `index` replaced by another base64url character. */
function withCharacterChanged(token: string, index: number): string {
  const replacement = token[index] === 'A' ? 'B' : 'A';
  return token.slice(0, index) + replacement + token.slice(index + 1);
}

describe('paging through GET /v1/webhooks', () => {
  let key: string;
  /** 25 webhooks, newest first. */
  let newestFirst: string[];
  beforeAll(async () => {
    key = await api.newAccountKey();
    newestFirst = (await api.createMany(key, 25)).reverse();
  });

  it('gives pages of exactly min(pageSize, remaining) and no nextPageToken key on the last', async () => {
    const pages = await api.pageThrough(key, { pageSizes: [10] });
    expect(pageLengths(pages)).toEqual([10, 10, 5]);
    expect(tokenKeys(pages)).toEqual([true, true, false]);
    expect(allIds(pages)).toEqual(newestFirst);
  });

  it('ends with a full page without a token when the count is a multiple of pageSize', async () => {
    const pages = await api.pageThrough(key, { pageSizes: [5] });
    expect(pageLengths(pages)).toEqual([5, 5, 5, 5, 5]);
    expect(tokenKeys(pages)).toEqual([true, true, true, true, false]);
    expect(allIds(pages)).toEqual(newestFirst);
  });

  it('returns every webhook exactly once with pageSize 1', async () => {
    const pages = await api.pageThrough(key, { pageSizes: [1] });
    expect(pages).toHaveLength(25);
    expect(allIds(pages)).toEqual(newestFirst);
  });

  it('follows a change of pageSize between pages', async () => {
    const pages = await api.pageThrough(key, { pageSizes: [3, 7, 1, 100] });
    expect(pageLengths(pages)).toEqual([3, 7, 1, 14]);
    expect(allIds(pages)).toEqual(newestFirst);
  });

  it('gives the same page for the same token twice', async () => {
    const first = await api.page(key, { pageSize: 4 });
    const again = await api.page(key, { pageSize: 4, pageToken: first.nextPageToken });
    expect(await api.page(key, { pageSize: 4, pageToken: first.nextPageToken })).toEqual(again);
    expect(again.ids).toEqual(newestFirst.slice(4, 8));
  });
});

describe('paging while webhooks change', () => {
  it('returns every webhook that existed throughout exactly once when others are created between pages', async () => {
    const key = await api.newAccountKey();
    const existing = (await api.createMany(key, 9)).reverse();
    const pages = await api.pageThrough(key, {
      pageSizes: [4],
      beforePage: async (index) => {
        if (index > 0) await api.createMany(key, 2);
      },
    });
    const listed = allIds(pages);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.filter((id) => existing.includes(id))).toEqual(existing);
  });

  it('returns every remaining webhook exactly once when some are deleted between pages', async () => {
    const key = await api.newAccountKey();
    const newestFirst = (await api.createMany(key, 12)).reverse();
    // Deleted before page 2: the last webhook of page 1 (the token's position), one already
    // listed, and one not yet listed.
    const deleted = [newestFirst[3]!, newestFirst[0]!, newestFirst[6]!];
    const pages = await api.pageThrough(key, {
      pageSizes: [4],
      beforePage: async (index) => {
        if (index !== 1) return;
        for (const id of deleted) expect((await api.call('DELETE', `/v1/webhooks/${id}?permanent=true`, { key })).status).toBe(200);
      },
    });
    const listed = allIds(pages);
    expect(new Set(listed).size).toBe(listed.length);
    const survivors = newestFirst.filter((id) => !deleted.includes(id));
    expect(listed.filter((id) => survivors.includes(id))).toEqual(survivors);
    expect(listed.slice(4)).toEqual(newestFirst.slice(4).filter((id) => !deleted.includes(id)));
  });
});

describe('pageToken validation', () => {
  let key: string;
  let token: string;
  beforeAll(async () => {
    key = await api.newAccountKey();
    await api.createMany(key, 3);
    token = (await api.page(key, { pageSize: 1 })).nextPageToken!;
  });

  it.each([
    ['a word', 'garbage'],
    ['characters outside base64url', 'not a token!'],
    ['a token of the right length that was never issued', 'A'.repeat(44)],
    ['a token over 1024 characters', 'x'.repeat(2000)],
  ])('answers 400 with "Invalid pageToken…" to garbage: %s', async (_, garbage) => {
    const response = await api.call('GET', `/v1/webhooks?pageToken=${encodeURIComponent(garbage)}`, { key });
    expect(expectError(response, 400)).toMatch(INVALID_PAGE_TOKEN);
  });

  it('answers 400 with "Invalid pageToken…" to a token with one character changed', async () => {
    for (const index of [0, 1, Math.floor(token.length / 2), token.length - 1]) {
      const altered = withCharacterChanged(token, index);
      const response = await api.call('GET', `/v1/webhooks?pageSize=1&pageToken=${altered}`, { key });
      expect(expectError(response, 400)).toMatch(INVALID_PAGE_TOKEN);
    }
  });

  it('answers 400 with "Invalid pageToken…" to a token with characters added or removed', async () => {
    for (const altered of [`${token}A`, token.slice(0, -1), `${token}=`]) {
      const response = await api.call('GET', `/v1/webhooks?pageToken=${encodeURIComponent(altered)}`, { key });
      expect(expectError(response, 400)).toMatch(INVALID_PAGE_TOKEN);
    }
  });

  it("answers 400 with \"Invalid pageToken…\" to another account's token", async () => {
    const otherKey = await api.newAccountKey();
    await api.createMany(otherKey, 2);
    const otherToken = (await api.page(otherKey, { pageSize: 1 })).nextPageToken!;
    const response = await api.call('GET', `/v1/webhooks?pageToken=${otherToken}`, { key });
    expect(expectError(response, 400)).toMatch(INVALID_PAGE_TOKEN);
  });

  it.each<[string | undefined, string | undefined]>([
    [undefined, 'active'],
    [undefined, 'inactive'],
    ['active', undefined],
    ['active', 'inactive'],
  ])('answers 400 with "Invalid pageToken…" to a token listed with status %s used with status %s', async (from, to) => {
    const listed = await api.page(key, { pageSize: 1, status: from });
    const response = await api.call('GET', `/v1/webhooks?pageSize=1${to ? `&status=${to}` : ''}&pageToken=${listed.nextPageToken}`, { key });
    expect(expectError(response, 400)).toMatch(INVALID_PAGE_TOKEN);
  });

  it('accepts the token with a different pageSize', async () => {
    expect((await api.page(key, { pageSize: 2, pageToken: token })).ids).toHaveLength(2);
  });
});

describe('the status filter', () => {
  let key: string;
  let inactive: string[];
  let active: string[];
  beforeAll(async () => {
    key = await api.newAccountKey();
    const newestFirst = (await api.createMany(key, 9)).reverse();
    inactive = newestFirst.filter((_, index) => [0, 2, 3, 7, 8].includes(index));
    active = newestFirst.filter((id) => !inactive.includes(id));
    for (const id of inactive) expect((await api.patch(key, id, { status: 'inactive' })).status).toBe(200);
  });

  it('lists exactly the inactive webhooks with status=inactive, newest first, in exact pages', async () => {
    const pages = await api.pageThrough(key, { status: 'inactive', pageSizes: [2] });
    expect(pageLengths(pages)).toEqual([2, 2, 1]);
    expect(tokenKeys(pages)).toEqual([true, true, false]);
    expect(allIds(pages)).toEqual(inactive);
  });

  it('lists exactly the active webhooks with status=active, newest first, in exact pages', async () => {
    const pages = await api.pageThrough(key, { status: 'active', pageSizes: [2] });
    expect(pageLengths(pages)).toEqual([2, 2]);
    expect(tokenKeys(pages)).toEqual([true, false]);
    expect(allIds(pages)).toEqual(active);
  });

  it('lists both with no status filter', async () => {
    const all = await api.listAllIds(key);
    expect([...all].sort()).toEqual([...active, ...inactive].sort());
  });

  it('shows the status of each listed webhook matching the filter', async () => {
    const response = await api.call('GET', '/v1/webhooks?status=inactive&pageSize=100', { key });
    expect(response.body.webhooks.map((webhook: { status: string }) => webhook.status)).toEqual(inactive.map(() => 'inactive'));
  });

  it('moves a webhook between the filters when its status is patched back', async () => {
    const otherKey = await api.newAccountKey();
    const [id] = await api.createMany(otherKey, 1);
    await api.patch(otherKey, id!, { status: 'inactive' });
    await api.patch(otherKey, id!, { status: 'active' });
    expect(await api.listAllIds(otherKey, { status: 'active' })).toEqual([id]);
    expect(await api.listAllIds(otherKey, { status: 'inactive' })).toEqual([]);
  });
});
