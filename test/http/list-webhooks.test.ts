import { useLocalService } from '../support/local-service';
import { expectError, expectWebhookShape } from './support/expectations';
import { listPath, webhooksApi } from './support/webhooks-api';

const api = webhooksApi(useLocalService());

describe('GET /v1/webhooks', () => {
  let key: string;
  /** 12 webhooks, in creation order. */
  let created: Record<string, any>[];
  beforeAll(async () => {
    key = await api.newAccountKey();
    created = [];
    for (let index = 0; index < 12; index += 1) created.push(await api.create(key, { name: `webhook ${index}` }));
  });
  const newestFirst = () => [...created].reverse();

  it('answers 200 with {webhooks: []} and no nextPageToken key for an account without webhooks', async () => {
    const response = await api.call('GET', '/v1/webhooks', { key: await api.newAccountKey() });
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({ webhooks: [] });
  });

  it('lists newest first: the created ids reversed', async () => {
    expect(await api.listAllIds(key)).toEqual(newestFirst().map((webhook) => webhook.id));
  });

  it('lists each webhook exactly as it was created, with exactly the spec fields', async () => {
    const response = await api.call('GET', listPath({ pageSize: 100 }), { key });
    expect(response.body.webhooks).toEqual(newestFirst());
    response.body.webhooks.forEach(expectWebhookShape);
  });

  it('answers with only webhooks and nextPageToken at the top level', async () => {
    const response = await api.call('GET', listPath({ pageSize: 5 }), { key });
    expect(Object.keys(response.body).sort()).toEqual(['nextPageToken', 'webhooks']);
    expect(typeof response.body.nextPageToken).toBe('string');
  });

  it('returns 10 webhooks when pageSize is absent', async () => {
    const page = await api.page(key, {});
    expect(page.ids).toEqual(newestFirst().slice(0, 10).map((webhook) => webhook.id));
    expect(page.nextPageToken).toEqual(expect.any(String));
  });

  it.each([
    ['pageSize=', '/v1/webhooks?pageSize='],
    ['status=', '/v1/webhooks?status='],
    ['pageToken=', '/v1/webhooks?pageToken='],
    ['all three empty', '/v1/webhooks?pageSize=&status=&pageToken='],
  ])('treats the empty parameter %s as absent', async (_, path) => {
    const response = await api.call('GET', path, { key });
    expect(response.status).toBe(200);
    expect(response.body.webhooks.map((webhook: { id: string }) => webhook.id)).toEqual(
      newestFirst().slice(0, 10).map((webhook) => webhook.id),
    );
  });

  it('accepts the smallest pageSize, 1', async () => {
    const page = await api.page(key, { pageSize: 1 });
    expect(page.ids).toEqual([newestFirst()[0]!.id]);
  });

  it('accepts the largest pageSize, 100', async () => {
    const page = await api.page(key, { pageSize: 100 });
    expect(page.ids).toHaveLength(12);
    expect(page.hasTokenKey).toBe(false);
  });

  it.each(['0', '101', '-1', 'abc', '1.5', '1e1', '0x10', '1000'])('answers 400 naming pageSize when pageSize is %s', async (value) => {
    expectError(await api.call('GET', `/v1/webhooks?pageSize=${encodeURIComponent(value)}`, { key }), 400, 'pageSize');
  });

  it('answers 400 naming pageSize when pageSize is given twice', async () => {
    expectError(await api.call('GET', '/v1/webhooks?pageSize=5&pageSize=6', { key }), 400, 'pageSize');
  });

  it('answers 400 naming status when status is given twice', async () => {
    expectError(await api.call('GET', '/v1/webhooks?status=active&status=inactive', { key }), 400, 'status');
  });

  it.each(['ACTIVE', 'Inactive', 'paused', 'all'])('answers 400 naming status when status is %s', async (value) => {
    expectError(await api.call('GET', `/v1/webhooks?status=${value}`, { key }), 400, 'status');
  });

  it('answers 400 naming an unknown query parameter', async () => {
    expectError(await api.call('GET', '/v1/webhooks?limit=5', { key }), 400, 'limit');
  });

  it('answers 400 naming an unknown query parameter given beside valid ones', async () => {
    expectError(await api.call('GET', '/v1/webhooks?pageSize=5&sort=asc', { key }), 400, 'sort');
  });
});
