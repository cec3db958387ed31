import { randomUUID } from 'node:crypto';
import { randomAccount } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { expectError, type HttpResponse } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const api = webhooksApi(useLocalService());

/** The 404 body with the id taken out, so that answers for two different ids can be compared. */
function notFoundWithoutId(response: HttpResponse, id: string) {
  expectError(response, 404);
  return { ...response.body, message: (response.body.message as string).replaceAll(id, '<id>') };
}

describe('isolation between accounts', () => {
  let keyA: string;
  let keyB: string;
  let webhookA: Record<string, any>;
  beforeEach(async () => {
    [keyA, keyB] = [await api.newAccountKey(), await api.newAccountKey()];
    webhookA = await api.create(keyA, { name: 'belongs to A' });
  });

  it("never lists A's webhooks to B", async () => {
    expect(await api.listAllIds(keyB)).toEqual([]);
    const [ownB] = await api.createMany(keyB, 1);
    expect(await api.listAllIds(keyB)).toEqual([ownB]);
    expect(await api.listAllIds(keyB, { status: 'active' })).toEqual([ownB]);
    expect(await api.listAllIds(keyA)).toEqual([webhookA.id]);
  });

  it.each<[string, string, unknown]>([
    ['GET', 'get', undefined],
    ['PATCH', 'patch', { name: 'taken over by B' }],
    ['DELETE', 'delete', undefined],
  ])("answers B's %s of A's webhook with the 404 of an id that does not exist", async (method, _, body) => {
    const missingId = randomUUID();
    const forA = await api.call(method, `/v1/webhooks/${webhookA.id}`, { key: keyB, body });
    const forMissing = await api.call(method, `/v1/webhooks/${missingId}`, { key: keyB, body });
    expect(notFoundWithoutId(forA, webhookA.id)).toEqual(notFoundWithoutId(forMissing, missingId));
  });

  it.each<[string, unknown]>([
    ['PATCH', { name: 'taken over by B', status: 'inactive', url: 'https://attacker.example.com' }],
    ['DELETE', undefined],
  ])("leaves A's webhook unchanged after B's %s", async (method, body) => {
    await api.call(method, `/v1/webhooks/${webhookA.id}`, { key: keyB, body });
    expect(await api.get(keyA, webhookA.id)).toEqual(webhookA);
    expect(await api.listAllIds(keyA)).toEqual([webhookA.id]);
  });

  it("does not give B A's shared secret", async () => {
    expect((await api.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key: keyA })).status).toBe(201);
    expectError(await api.call('GET', '/v1/webhooks:getSharedSecret', { key: keyB }), 404);
  });

  it("leaves A's shared secret unchanged when B rotates its own", async () => {
    const secretA = (await api.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key: keyA })).body.secret;
    const secretB = (await api.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key: keyB })).body.secret;
    expect(secretB).not.toBe(secretA);
    expect((await api.call('GET', '/v1/webhooks:getSharedSecret', { key: keyA })).body).toEqual({ secret: secretA });
    expect((await api.call('GET', '/v1/webhooks:getSharedSecret', { key: keyB })).body).toEqual({ secret: secretB });
  });

  it("rejects A's page token in B's list", async () => {
    await api.createMany(keyA, 1);
    const tokenA = (await api.page(keyA, { pageSize: 1 })).nextPageToken;
    const response = await api.call('GET', `/v1/webhooks?pageToken=${tokenA}`, { key: keyB });
    expect(expectError(response, 400)).toMatch(/^Invalid pageToken/);
  });

  it('shares the webhooks and the secret between two keys of one account', async () => {
    const account = randomAccount();
    const [first, second] = [await api.keyFor(account), await api.keyFor(account)];
    const created = await api.create(first);
    const { secret } = (await api.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key: first })).body;
    expect(await api.get(second, created.id)).toEqual(created);
    expect((await api.call('GET', '/v1/webhooks:getSharedSecret', { key: second })).body).toEqual({ secret });
  });
});
