import createClient, { type Middleware } from 'openapi-fetch';
import { randomAddress } from '../support/factories';
import { checkAgainstApiDocument } from '../support/api-document';
import { useLocalService } from '../support/local-service';
import type { paths } from '../../console/src/api/schema.generated';
import { startReceiver, type Receiver } from '../support/receiver';
import { webhooksApi } from './support/webhooks-api';

// A client as a user of the API makes one: types generated from openapi.json by openapi-typescript
// (`npm run openapi` keeps console/src/api/schema.generated.ts, the console's), requests by openapi-fetch.
const service = useLocalService({ DELIVERY_RETRY_SCHEDULE: '0.2', DELIVERY_TIMEOUT_SECONDS: '1' });
const api = webhooksApi(service);

/** Every response the generated client gets is checked against the document too. */
const checkedAgainstDocument: Middleware = {
  async onResponse({ request, response }) {
    const text = await response.clone().text();
    checkAgainstApiDocument(request.method, new URL(request.url).pathname, response.status, text ? JSON.parse(text) : undefined);
  },
};

describe('a client generated from openapi.json (openapi-typescript + openapi-fetch)', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  function client(key: string) {
    const generated = createClient<paths>({ baseUrl: service.url(), headers: { 'x-service-api-key': key } });
    generated.use(checkedAgainstDocument);
    return generated;
  }

  it('drives every operation', async () => {
    const webhooks = client(await api.newAccountKey());
    const id = { params: { path: { id: '' } } };

    const rotated = await webhooks.POST('/v1/webhooks:generateOrRotateSharedSecret', { body: {} });
    expect(rotated.response.status).toBe(201);
    const secret = await webhooks.GET('/v1/webhooks:getSharedSecret');
    expect(secret.data?.secret).toBe(rotated.data?.secret);
    const chains = await webhooks.GET('/v1/chains');
    expect(chains.data?.chains.map((chain) => chain.chainId)).toContain('43114');

    const address = randomAddress();
    const created = await webhooks.POST('/v1/webhooks', {
      body: { url: receiver.url, chainId: '43114', eventType: 'address_activity', metadata: { addresses: [address] }, name: 'generated' },
    });
    expect(created.response.status).toBe(201);
    id.params.path.id = created.data!.id;
    expect(created.data).toMatchObject({ name: 'generated', status: 'active', metadata: { addresses: [address.toLowerCase()] } });

    const listed = await webhooks.GET('/v1/webhooks', { params: { query: { pageSize: 1, status: 'active' } } });
    expect(listed.data?.webhooks.map((webhook) => webhook.id)).toEqual([id.params.path.id]);
    expect((await webhooks.GET('/v1/webhooks/{id}', id)).data?.name).toBe('generated');
    const updated = await webhooks.PATCH('/v1/webhooks/{id}', { ...id, body: { name: 'renamed', includeLogs: true } });
    expect(updated.data).toMatchObject({ name: 'renamed', includeLogs: true });

    const second = randomAddress().toLowerCase();
    const added = await webhooks.PATCH('/v1/webhooks/{id}/addresses', { ...id, body: { addresses: [second] } });
    expect(added.data?.metadata.addresses).toHaveLength(2);
    const addresses = await webhooks.GET('/v1/webhooks/{id}/addresses', { params: { path: id.params.path, query: { pageSize: 10 } } });
    expect(addresses.data?.totalAddresses).toBe(2);
    const removed = await webhooks.DELETE('/v1/webhooks/{id}/addresses', { ...id, body: { addresses: [second] } });
    expect(removed.data?.metadata.addresses).toEqual([address.toLowerCase()]);

    const test = await webhooks.POST('/v1/webhooks/{id}/test', id);
    expect(test.response.status).toBe(202);
    const messageId = test.data!.messageId;
    await receiver.waitFor(1);
    const message = { params: { path: { ...id.params.path, messageId } } };
    let delivered = await webhooks.GET('/v1/webhooks/{id}/deliveries/{messageId}', message);
    for (let tries = 0; delivered.data?.status !== 'succeeded' && tries < 50; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      delivered = await webhooks.GET('/v1/webhooks/{id}/deliveries/{messageId}', message);
    }
    expect(delivered.data).toMatchObject({ messageId, status: 'succeeded', attempts: 1 });
    const log = await webhooks.GET('/v1/webhooks/{id}/deliveries', { params: { path: id.params.path, query: { status: 'succeeded' } } });
    expect(log.data?.deliveries.map((delivery) => delivery.messageId)).toEqual([messageId]);
    const retried = await webhooks.POST('/v1/webhooks/{id}/deliveries/{messageId}/retry', message);
    expect(retried.data).toEqual({ messageId });
    await receiver.waitFor(2);
    const recovered = await webhooks.POST('/v1/webhooks/{id}/recover', { ...id, body: { since: 0 } });
    expect(recovered.data).toEqual({ messages: 0 });

    const deactivated = await webhooks.DELETE('/v1/webhooks/{id}', id);
    expect(deactivated.data?.status).toBe('inactive');
    const gone = await webhooks.DELETE('/v1/webhooks/{id}', { params: { path: id.params.path, query: { permanent: 'true' } } });
    expect(gone.data?.id).toBe(id.params.path.id);

    const missing = await webhooks.GET('/v1/webhooks/{id}', id);
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ statusCode: 404, error: 'Not Found' });
  }, 30_000);

  it('gets the error shape the document gives for bad input and a bad key', async () => {
    const rejected = await client('not-a-key').GET('/v1/webhooks');
    expect(rejected.error).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
    const bad = await client(await api.newAccountKey()).GET('/v1/webhooks', { params: { query: { pageSize: 0 } } });
    expect(bad.error?.message).toContain('pageSize');
  });
});
