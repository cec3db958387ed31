import { randomUUID } from 'node:crypto';
import { randomAddress, randomEventSignature, webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { expectError, expectWebhookShape, UUID_PATTERN } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const api = webhooksApi(useLocalService());

describe('POST /v1/webhooks', () => {
  it('answers 201 with the new webhook: a UUID id, status active, createdAt in epoch milliseconds', async () => {
    const key = await api.newAccountKey();
    const before = Date.now();
    const response = await api.call('POST', '/v1/webhooks', { key, body: webhookInput() });
    const after = Date.now();
    expect(response.status).toBe(201);
    expect(response.body.id).toMatch(UUID_PATTERN);
    expect(response.body.status).toBe('active');
    expect(Number.isInteger(response.body.createdAt)).toBe(true);
    expect(response.body.createdAt).toBeGreaterThanOrEqual(before);
    expect(response.body.createdAt).toBeLessThanOrEqual(after);
  });

  it('returns every given field as given', async () => {
    const key = await api.newAccountKey();
    const input = webhookInput({
      url: 'https://hooks.example.org/receive?token=abc',
      chainId: '1',
      name: 'treasury',
      description: 'watches the treasury wallets',
      includeInternalTxs: true,
      includeLogs: true,
      metadata: { addresses: [randomAddress(), randomAddress()].sort(), eventSignatures: [randomEventSignature()] },
    });
    expect(await api.create(key, input)).toMatchObject(input);
  });

  it('fills in the defaults: empty name and description, both flags false, no event signatures', async () => {
    const key = await api.newAccountKey();
    const address = randomAddress();
    const created = await api.create(key, { metadata: { addresses: [address] } });
    expect(created).toMatchObject({
      name: '',
      description: '',
      includeInternalTxs: false,
      includeLogs: false,
      metadata: { addresses: [address], eventSignatures: [] },
    });
  });

  it('answers with exactly the spec fields', async () => {
    expectWebhookShape(await api.create(await api.newAccountKey()));
  });

  it('gives each webhook its own id', async () => {
    const key = await api.newAccountKey();
    const ids = await api.createMany(key, 3);
    expect(new Set(ids).size).toBe(3);
  });

  it('stores and returns the url in its normalized form', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key, { url: 'HTTPS://Receiver.Example.COM:443/a/../hooks' });
    expect(created.url).toBe('https://receiver.example.com/hooks');
    expect((await api.get(key, created.id)).url).toBe('https://receiver.example.com/hooks');
  });

  it.each([
    ['surrounding spaces', { url: '  https://receiver.example.com/h  ' }, 'url'],
    ['a newline in the url host', { url: 'https://receiver.exa\nmple.com/h' }, 'url'],
    ['no host', { url: 'https:///path' }, 'url'],
    ['a NUL in the name', { name: 'a\u0000b' }, 'name'],
    ['an unpaired surrogate in the description', { description: 'a\ud800b' }, 'description'],
  ])('answers 400 naming the field for %s, and stores nothing', async (_, overrides, field) => {
    const key = await api.newAccountKey();
    expectError(await api.call('POST', '/v1/webhooks', { key, body: webhookInput(overrides) }), 400, field);
    expect(await api.listAllIds(key)).toEqual([]);
  });

  it('counts the address limit after normalizing: 100 distinct plus one in another case is accepted', async () => {
    const key = await api.newAccountKey();
    const addresses = Array.from({ length: 100 }, randomAddress);
    const created = await api.create(key, { metadata: { addresses: [...addresses, addresses[0]!.toUpperCase().replace('0X', '0x')] } });
    expect(created.metadata.addresses).toEqual([...addresses].sort());
  });

  it('stores addresses lower-cased and de-duplicated, and shows them in address order', async () => {
    const key = await api.newAccountKey();
    const [first, second] = [randomAddress(), randomAddress()].sort() as [string, string];
    const upper = (address: string) => `0x${address.slice(2).toUpperCase()}`;
    const created = await api.create(key, { metadata: { addresses: [second, upper(first), first, upper(second)] } });
    expect(created.metadata.addresses).toEqual([first, second]);
    expect((await api.get(key, created.id)).metadata.addresses).toEqual([first, second]);
  });

  it('stores event signatures lower-cased and de-duplicated', async () => {
    const key = await api.newAccountKey();
    const signature = randomEventSignature();
    const mixedCase = `0x${signature.slice(2, 34).toUpperCase()}${signature.slice(34)}`;
    const created = await api.create(key, { metadata: { addresses: [randomAddress()], eventSignatures: [mixedCase, signature] } });
    expect(created.metadata.eventSignatures).toEqual([signature]);
    expect((await api.get(key, created.id)).metadata.eventSignatures).toEqual([signature]);
  });

  it('accepts an http://localhost URL in the local stage', async () => {
    const key = await api.newAccountKey();
    expect((await api.create(key, { url: 'http://localhost:8080/x' })).url).toBe('http://localhost:8080/x');
  });
});

describe('GET /v1/webhooks/{id}', () => {
  it('answers 200 with the webhook as created', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const response = await api.call('GET', `/v1/webhooks/${created.id}`, { key });
    expect(response.status).toBe(200);
    expect(response.body).toEqual(created);
    expectWebhookShape(response.body);
  });

  it('answers 404 in the error shape for an id that does not exist', async () => {
    expectError(await api.call('GET', `/v1/webhooks/${randomUUID()}`, { key: await api.newAccountKey() }), 404);
  });
});

describe('PATCH /v1/webhooks/{id}', () => {
  it.each([
    ['name', { name: 'renamed' }],
    ['description', { description: 'a new description' }],
    ['url', { url: 'https://elsewhere.example.net/hook' }],
    ['status', { status: 'inactive' }],
    ['includeInternalTxs', { includeInternalTxs: true }],
    ['includeLogs', { includeLogs: true }],
  ])('changes %s, answers 200 with the updated webhook and keeps the rest', async (_, change) => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const response = await api.patch(key, created.id, change);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...created, ...change });
    expect(await api.get(key, created.id)).toEqual(response.body);
  });

  it('changes several fields in one call', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const change = { name: 'n', description: 'd', status: 'inactive', includeLogs: true };
    const response = await api.patch(key, created.id, change);
    expect(response.body).toEqual({ ...created, ...change });
  });

  it('answers with exactly the spec fields', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    expectWebhookShape((await api.patch(key, created.id, { name: 'renamed' })).body);
  });

  it('sets a webhook back to active', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    await api.patch(key, created.id, { status: 'inactive' });
    expect((await api.patch(key, created.id, { status: 'active' })).body.status).toBe('active');
  });

  it('replaces the event signatures and keeps the addresses when only metadata.eventSignatures is given', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const eventSignatures = [randomEventSignature()];
    const response = await api.patch(key, created.id, { metadata: { eventSignatures } });
    expect(response.body.metadata).toEqual({ addresses: created.metadata.addresses, eventSignatures });
  });

  it('answers 400 for metadata.addresses, pointing to the addresses operations, and changes nothing', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const response = await api.patch(key, created.id, { name: 'renamed', metadata: { addresses: [randomAddress()] } });
    expect(expectError(response, 400, 'metadata.addresses')).toContain('/v1/webhooks/{id}/addresses');
    expect(await api.get(key, created.id)).toEqual(created);
  });

  it.each([
    ['an empty body', {}],
    ['an empty metadata', { metadata: {} }],
  ])('answers 400 naming what may be set for %s, for a webhook that exists or not', async (_, body) => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    for (const id of [created.id, randomUUID()]) {
      expect(expectError(await api.patch(key, id, body), 400)).toContain('metadata.eventSignatures');
    }
    expect(await api.get(key, created.id)).toEqual(created);
  });

  it('answers 404 in the error shape for an id that does not exist', async () => {
    expectError(await api.patch(await api.newAccountKey(), randomUUID(), { name: 'x' }), 404);
  });
});

describe('DELETE /v1/webhooks/{id} (deactivate)', () => {
  it('answers 200 with the webhook as it now is: inactive, everything else kept', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const patched = (await api.patch(key, created.id, { name: 'last name' })).body;
    const response = await api.call('DELETE', `/v1/webhooks/${created.id}`, { key });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...patched, status: 'inactive' });
    expectWebhookShape(response.body);
  });

  it('keeps the webhook readable and listed under status=inactive, and a PATCH reactivates it', async () => {
    const key = await api.newAccountKey();
    const [kept, deactivated] = await api.createMany(key, 2);
    await api.call('DELETE', `/v1/webhooks/${deactivated}`, { key });
    expect((await api.get(key, deactivated!)).status).toBe('inactive');
    expect(await api.listAllIds(key, { status: 'inactive' })).toEqual([deactivated]);
    expect(await api.listAllIds(key, { status: 'active' })).toEqual([kept]);
    expect(await api.listAllIds(key)).toEqual([deactivated, kept]);
    expect((await api.patch(key, deactivated!, { status: 'active' })).body.status).toBe('active');
    expect(await api.listAllIds(key, { status: 'active' })).toEqual([deactivated, kept]);
  });

  it.each(['', '?permanent=false'])('answers 200 again for a webhook already inactive (%s)', async (query) => {
    const key = await api.newAccountKey();
    const created = await api.create(key, { name: 'twice' });
    await api.call('DELETE', `/v1/webhooks/${created.id}`, { key });
    const again = await api.call('DELETE', `/v1/webhooks/${created.id}${query}`, { key });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...created, status: 'inactive' });
  });

  it('answers 404 in the error shape for an id that does not exist', async () => {
    expectError(await api.call('DELETE', `/v1/webhooks/${randomUUID()}`, { key: await api.newAccountKey() }), 404);
  });
});

describe('DELETE /v1/webhooks/{id}?permanent=true', () => {
  it('answers 200 with the webhook as it was', async () => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const patched = (await api.patch(key, created.id, { name: 'last name' })).body;
    const response = await api.call('DELETE', `/v1/webhooks/${created.id}?permanent=true`, { key });
    expect(response.status).toBe(200);
    expect(response.body).toEqual(patched);
    expectWebhookShape(response.body);
  });

  it('makes the webhook unknown to get, patch, every list and a second delete', async () => {
    const key = await api.newAccountKey();
    const [kept, deleted] = await api.createMany(key, 2);
    await api.call('DELETE', `/v1/webhooks/${deleted}`, { key });
    await api.call('DELETE', `/v1/webhooks/${deleted}?permanent=true`, { key });
    expectError(await api.call('GET', `/v1/webhooks/${deleted}`, { key }), 404);
    expectError(await api.patch(key, deleted!, { name: 'x' }), 404);
    expect(await api.listAllIds(key)).toEqual([kept]);
    expect(await api.listAllIds(key, { status: 'inactive' })).toEqual([]);
    expect(await api.listAllIds(key, { status: 'active' })).toEqual([kept]);
    expectError(await api.call('DELETE', `/v1/webhooks/${deleted}?permanent=true`, { key }), 404);
    expectError(await api.call('DELETE', `/v1/webhooks/${deleted}`, { key }), 404);
  });

  it.each(['yes', '1', 'TRUE', 'true,true'])('answers 400 naming permanent for permanent=%s, and changes nothing', async (value) => {
    const key = await api.newAccountKey();
    const created = await api.create(key);
    const message = expectError(await api.call('DELETE', `/v1/webhooks/${created.id}?permanent=${value}`, { key }), 400, 'permanent');
    expect(message).toContain("'true' or 'false'");
    expect(await api.get(key, created.id)).toEqual(created);
  });

  it("answers 404 for another account's webhook, for both kinds of delete, and leaves it as it was", async () => {
    const owner = await api.newAccountKey();
    const created = await api.create(owner);
    const other = await api.newAccountKey();
    expectError(await api.call('DELETE', `/v1/webhooks/${created.id}`, { key: other }), 404);
    expectError(await api.call('DELETE', `/v1/webhooks/${created.id}?permanent=true`, { key: other }), 404);
    expect(await api.get(owner, created.id)).toEqual(created);
  });
});

describe('the id path parameter', () => {
  it.each(['GET', 'PATCH', 'DELETE'])('answers %s with a malformed id with 400 naming id', async (method) => {
    const key = await api.newAccountKey();
    for (const id of ['not-a-uuid', '12345', `${randomUUID()}0`, 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz']) {
      const response = await api.call(method, `/v1/webhooks/${id}`, { key, body: method === 'PATCH' ? { name: 'x' } : undefined });
      expectError(response, 400, 'id');
    }
  });
});
