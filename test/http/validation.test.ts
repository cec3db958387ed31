import { randomAddress, randomChecksummedAddress, randomEventSignature, webhookInput, withChecksumTypo } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { expectError } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const api = webhooksApi(useLocalService());

const ONE_MIB = 1024 * 1024;
const httpsUrlOfLength = (length: number) => {
  const base = 'https://receiver.example.com/';
  return base + 'a'.repeat(length - base.length);
};
const addresses = (count: number) => Array.from({ length: count }, randomAddress);
const withoutField = (field: string) => {
  const { [field]: _, ...rest } = webhookInput();
  return rest;
};

async function expectNothingListed(key: string) {
  expect(await api.listAllIds(key)).toEqual([]);
}

describe('POST /v1/webhooks validation', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['an http:// URL to another host', webhookInput({ url: 'http://example.com' }), 'url'],
    ['a URL over 2048 characters', webhookInput({ url: httpsUrlOfLength(2049) }), 'url'],
    ['a URL with credentials', webhookInput({ url: 'https://u:p@host.example.com/hook' }), 'url'],
    ['a URL with only a user name', webhookInput({ url: 'https://user@host.example.com/hook' }), 'url'],
    ['a URL that is not a URL', webhookInput({ url: 'receiver.example.com/hook' }), 'url'],
    ['an ftp:// URL', webhookInput({ url: 'ftp://receiver.example.com/hook' }), 'url'],
    ['an eventType other than address_activity', webhookInput({ eventType: 'transaction' }), 'eventType'],
    ['an address without 0x', webhookInput({ metadata: { addresses: [randomAddress().slice(2)] } }), 'metadata.addresses'],
    ['an address of 39 hex digits', webhookInput({ metadata: { addresses: [randomAddress().slice(0, -1)] } }), 'metadata.addresses'],
    ['an address with a non-hex digit', webhookInput({ metadata: { addresses: [`${randomAddress().slice(0, -1)}g`] } }), 'metadata.addresses'],
    [
      'an event signature of 63 hex digits',
      webhookInput({ metadata: { addresses: addresses(1), eventSignatures: [randomEventSignature().slice(0, -1)] } }),
      'metadata.eventSignatures',
    ],
    [
      'an event signature of 40 hex digits',
      webhookInput({ metadata: { addresses: addresses(1), eventSignatures: [randomAddress()] } }),
      'metadata.eventSignatures',
    ],
    ['more than 10 000 addresses', webhookInput({ metadata: { addresses: addresses(10_001) } }), 'metadata.addresses'],
    ['a name over 256 characters', webhookInput({ name: 'n'.repeat(257) }), 'name'],
    ['a description over 1024 characters', webhookInput({ description: 'd'.repeat(1025) }), 'description'],
    ['an unknown top-level field', webhookInput({ colour: 'blue' }), 'colour'],
    ['a status, which a new webhook cannot choose', webhookInput({ status: 'inactive' }), 'status'],
    ['an unknown field inside metadata', webhookInput({ metadata: { addresses: addresses(1), topics: [] } }), 'topics'],
    ['chainId as a number', webhookInput({ chainId: 43114 }), 'chainId'],
    ['includeLogs as "yes"', webhookInput({ includeLogs: 'yes' }), 'includeLogs'],
    ['includeInternalTxs as 1', webhookInput({ includeInternalTxs: 1 }), 'includeInternalTxs'],
    ['name as null', webhookInput({ name: null }), 'name'],
    ['metadata as an array', webhookInput({ metadata: [randomAddress()] }), 'metadata'],
    ['addresses as a string', webhookInput({ metadata: { addresses: randomAddress() } }), 'metadata.addresses'],
    ['no url', withoutField('url'), 'url'],
    ['no chainId', withoutField('chainId'), 'chainId'],
    ['no eventType', withoutField('eventType'), 'eventType'],
    ['no metadata', withoutField('metadata'), 'metadata'],
    ['no metadata.addresses', webhookInput({ metadata: { eventSignatures: [randomEventSignature()] } }), 'metadata.addresses'],
  ])('answers 400 naming the field to %s, and creates nothing', async (_, body, field) => {
    const key = await api.newAccountKey();
    expectError(await api.call('POST', '/v1/webhooks', { key, body }), 400, field);
    await expectNothingListed(key);
  });

  it.each<[string, string | undefined]>([
    ['malformed JSON', '{"url": "https://example.com",'],
    ['a JSON array', JSON.stringify([webhookInput()])],
    ['a JSON string', JSON.stringify('https://example.com')],
    ['JSON null', 'null'],
    ['a JSON number', '42'],
    ['no body at all', undefined],
  ])('answers 400 to %s as the body, and creates nothing', async (_, body) => {
    const key = await api.newAccountKey();
    expectError(await api.call('POST', '/v1/webhooks', { key, body }), 400);
    await expectNothingListed(key);
  });

  it('answers 413 in the error shape to a body over 1 MiB, and creates nothing', async () => {
    const key = await api.newAccountKey();
    const body = webhookInput({ description: 'd'.repeat(Math.ceil(1.1 * ONE_MIB)) });
    expectError(await api.call('POST', '/v1/webhooks', { key, body }), 413);
    await expectNothingListed(key);
  });

  it("answers 413 from the gateway itself to a body over API Gateway's 10 MiB, and creates nothing", async () => {
    const key = await api.newAccountKey();
    const body = webhookInput({ description: 'd'.repeat(11 * ONE_MIB) });
    expect(expectError(await api.call('POST', '/v1/webhooks', { key, body }), 413)).toMatch(/gateway's limit/);
    await expectNothingListed(key);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded'])('answers 415 to a JSON body sent as %s, and creates nothing', async (contentType) => {
    const key = await api.newAccountKey();
    const response = await api.call('POST', '/v1/webhooks', { key, body: webhookInput(), headers: { 'content-type': contentType } });
    expect(expectError(response, 415)).toContain('application/json');
    await expectNothingListed(key);
  });

  it('reads a body with no content type as JSON, and one with a leading byte order mark', async () => {
    const key = await api.newAccountKey();
    for (const text of [JSON.stringify(webhookInput()), `\ufeff${JSON.stringify(webhookInput())}`]) {
      const response = await fetch(`${api.url()}/v1/webhooks`, { method: 'POST', headers: { 'x-service-api-key': key }, body: new TextEncoder().encode(text) });
      expect(response.status).toBe(201);
    }
  });

  it.each<[string, Record<string, unknown>]>([
    ['a URL of exactly 2048 characters', { url: httpsUrlOfLength(2048) }],
    ['a name of exactly 256 characters', { name: 'n'.repeat(256) }],
    ['a description of exactly 1024 characters', { description: 'd'.repeat(1024) }],
    ['exactly 100 addresses (shown in address order)', { metadata: { addresses: addresses(100).sort() } }],
    ['http://127.0.0.1 in the local stage', { url: 'http://127.0.0.1:3000/hook' }],
  ])('accepts %s', async (_, overrides) => {
    const key = await api.newAccountKey();
    const created = await api.create(key, overrides);
    expect(created).toMatchObject(overrides);
  });
});

describe('PATCH /v1/webhooks/{id} validation', () => {
  let key: string;
  let original: Record<string, unknown>;
  // A webhook per test, so that a change wrongly made by one test cannot make another fail.
  beforeEach(async () => {
    key = await api.newAccountKey();
    original = await api.create(key, { name: 'original', metadata: { addresses: addresses(2), eventSignatures: [randomEventSignature()] } });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['an http:// URL to another host', { url: 'http://example.com' }, 'url'],
    ['a URL with credentials', { url: 'https://u:p@host.example.com' }, 'url'],
    ['a URL over 2048 characters', { url: httpsUrlOfLength(2049) }, 'url'],
    ['a status other than active or inactive', { status: 'paused' }, 'status'],
    ['a name over 256 characters', { name: 'n'.repeat(257) }, 'name'],
    ['a description over 1024 characters', { description: 'd'.repeat(1025) }, 'description'],
    ['includeLogs as "yes"', { includeLogs: 'yes' }, 'includeLogs'],
    ['a malformed address', { metadata: { addresses: ['0x1234'] } }, 'metadata.addresses'],
    ['more than 100 addresses', { metadata: { addresses: addresses(101) } }, 'metadata.addresses'],
    ['a malformed event signature', { metadata: { eventSignatures: ['0xabc'] } }, 'metadata.eventSignatures'],
    ['an unknown field inside metadata', { metadata: { topics: [] } }, 'topics'],
    ['an unknown top-level field', { colour: 'blue' }, 'colour'],
    ['chainId, which cannot be changed', { chainId: '1' }, 'chainId'],
    ['eventType, which cannot be changed', { eventType: 'address_activity' }, 'eventType'],
    ['id, which cannot be changed', { id: '0190b0a0-0000-7000-8000-000000000000' }, 'id'],
    ['createdAt, which cannot be changed', { createdAt: 1 }, 'createdAt'],
    ['a valid name beside an invalid url', { name: 'changed', url: 'http://example.com' }, 'url'],
  ])('answers 400 naming the field to %s, and leaves the webhook unchanged', async (_, body, field) => {
    expectError(await api.patch(key, original.id as string, body), 400, field);
    expect(await api.get(key, original.id as string)).toEqual(original);
  });

  it.each<[string, string | undefined]>([
    ['an empty object', '{}'],
    ['no body at all', undefined],
    ['malformed JSON', '{"name": '],
    ['a JSON array', JSON.stringify([{ name: 'x' }])],
    ['a JSON string', JSON.stringify('x')],
    ['JSON null', 'null'],
  ])('answers 400 to %s as the body, and leaves the webhook unchanged', async (_, body) => {
    expectError(await api.patch(key, original.id as string, body), 400);
    expect(await api.get(key, original.id as string)).toEqual(original);
  });

  it('answers 413 in the error shape to a body over 1 MiB, and leaves the webhook unchanged', async () => {
    const body = { description: 'd'.repeat(Math.ceil(1.1 * ONE_MIB)) };
    expectError(await api.patch(key, original.id as string, body), 413);
    expect(await api.get(key, original.id as string)).toEqual(original);
  });
});

describe('addresses whose EIP-55 checksum does not hold', () => {
  const checksumRefusal = (parameter: string, address: string) =>
    `Invalid body field ${parameter}: ${address} has a mixed-case EIP-55 checksum that does not match; check it for a typo, or send it all lower-case`;

  it('are a 400 on create naming the address and its index, and nothing is created', async () => {
    const key = await api.newAccountKey();
    const typo = withChecksumTypo(randomChecksummedAddress());
    const body = webhookInput({ metadata: { addresses: [randomChecksummedAddress(), randomAddress(), typo] } });
    expect(expectError(await api.call('POST', '/v1/webhooks', { key, body }), 400)).toBe(checksumRefusal('metadata.addresses[2]', typo));
    await expectNothingListed(key);
  });

  it.each(['PATCH', 'DELETE'] as const)('are a 400 on %s /v1/webhooks/{id}/addresses, and the addresses are unchanged', async (method) => {
    const key = await api.newAccountKey();
    const watched = randomChecksummedAddress();
    const { id } = await api.create(key, { metadata: { addresses: [watched] } });
    const typo = withChecksumTypo(randomChecksummedAddress());
    const response = await api.call(method, `/v1/webhooks/${id}/addresses`, { key, body: { addresses: [typo, watched] } });
    expect(expectError(response, 400)).toBe(checksumRefusal('addresses[0]', typo));
    expect((await api.get(key, id as string)).metadata).toMatchObject({ addresses: [watched.toLowerCase()] });
  });

  it('are accepted checksummed, all lower-case or all upper-case', async () => {
    const key = await api.newAccountKey();
    const checksummed = randomChecksummedAddress();
    const created = await api.create(key, { metadata: { addresses: [checksummed, checksummed.toLowerCase(), `0x${checksummed.slice(2).toUpperCase()}`] } });
    expect(created.metadata).toMatchObject({ addresses: [checksummed.toLowerCase()] });
  });
});

describe('a url that is not a url', () => {
  it.each([
    ['create', (key: string) => api.call('POST', '/v1/webhooks', { key, body: webhookInput({ url: 'not a url' }) })],
    ['update', async (key: string) => api.patch(key, (await api.create(key)).id as string, { url: 'not a url' })],
  ])('is a 400 on %s saying it must be an absolute https:// URL', async (_, send) => {
    const key = await api.newAccountKey();
    expect(expectError(await send(key), 400)).toBe(
      'Invalid body field url: must be an absolute https:// URL (or http:// to localhost, 127.0.0.1 or [::1]), e.g. https://example.com/webhooks',
    );
  });
});

describe('names and descriptions that would read as other text', () => {
  const refusals: [string, Record<string, string>, string][] = [
    ['a zero-width space in the name', { name: 'npm start\u200b' }, 'Invalid body field name: must not contain invisible or direction-changing characters (U+200B at position 10)'],
    ['a right-to-left override in the name', { name: 'invoice \u202egnp.exe' }, 'Invalid body field name: must not contain invisible or direction-changing characters (U+202E at position 9)'],
    ['a first-strong isolate in the description', { description: 'paid\u2068' }, 'Invalid body field description: must not contain invisible or direction-changing characters (U+2068 at position 5)'],
    ['a line separator in the description', { description: 'one\u2028two' }, 'Invalid body field description: must not contain line or paragraph separators (U+2028 at position 4)'],
  ];

  it.each(refusals)('are a 400 on create naming the field and the character (%s), and nothing is created', async (_, overrides, message) => {
    const key = await api.newAccountKey();
    expect(expectError(await api.call('POST', '/v1/webhooks', { key, body: webhookInput(overrides) }), 400)).toBe(message);
    await expectNothingListed(key);
  });

  it.each(refusals)('are a 400 on PATCH naming the field and the character (%s), and the webhook is unchanged', async (_, body, message) => {
    const key = await api.newAccountKey();
    const original = await api.create(key, { name: 'npm start', description: 'deploys' });
    expect(expectError(await api.patch(key, original.id as string, body), 400)).toBe(message);
    expect(await api.get(key, original.id as string)).toEqual(original);
  });

  it.each([
    ['a zero-width space', 'npm start\u200b', 'Invalid body field name: must not contain invisible or direction-changing characters (U+200B at position 10)'],
    ['a right-to-left override', 'billing \u202e(evitca', 'Invalid body field name: must not contain invisible or direction-changing characters (U+202E at position 9)'],
  ])("are a 400 on an API key's creation naming the field and the character (%s), and no key is made", async (_, name, message) => {
    const key = await api.newAccountKey();
    expect(expectError(await api.call('POST', '/v1/apiKeys', { key, body: { name } }), 400)).toBe(message);
    expect((await api.call('GET', '/v1/apiKeys', { key })).body.apiKeys).toHaveLength(1);
  });

  it('accepts emoji joined by zero-width joiners in a name, and line breaks and tabs in a description', async () => {
    const key = await api.newAccountKey();
    const named = { name: '👩‍💻 deploys 🏳️‍🌈', description: 'line one\r\nline\ttwo\n' };
    const created = await api.create(key, named);
    expect(created).toMatchObject(named);
    expect(await api.patch(key, created.id as string, { name: '❤️‍🔥', description: 'one\ntwo' })).toMatchObject({ status: 200, body: { name: '❤️‍🔥', description: 'one\ntwo' } });
  });
});
