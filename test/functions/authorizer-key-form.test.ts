import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { handler } from '../../functions/authorizer';
import { createApiKey, generateApiKey } from '../../lib/keys/api-keys';
import { ensureTable, startEmbeddedDynamoDb, type EmbeddedDynamoDb } from '../../infra/local/embedded-dynamodb';
import { authorizerEvent, keyHeader } from '../support/authorizer-event';
import { randomAccount } from '../support/factories';

/**
 * The embedded store behind a loopback proxy that counts the requests reaching it: the store is
 * real, and what is counted is what the SDK sent over the wire.
 */
let store: EmbeddedDynamoDb | undefined;
let proxy: Server | undefined;
let storeRequests = 0;

beforeAll(async () => {
  store = await startEmbeddedDynamoDb({ port: 0 });
  const storePort = store.port;
  proxy = createServer((incoming, answer) => {
    storeRequests += 1;
    const upstream = request({ host: '127.0.0.1', port: storePort, method: incoming.method, path: incoming.url, headers: incoming.headers }, (response) => {
      answer.writeHead(response.statusCode!, response.headers);
      response.pipe(answer);
    });
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy!.listen(0, '127.0.0.1', resolve));
  delete process.env.DYNAMODB_ENDPOINT;
  Object.assign(process.env, { DYNAMODB_PORT: String((proxy.address() as AddressInfo).port), TABLE_NAME: 'webhooks-key-form-test', STAGE: 'local' });
  await ensureTable(process.env.TABLE_NAME!);
});

afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await store?.close();
});

const { key: wellFormed } = generateApiKey();
const malformed: [string, string][] = [
  ['a UUID after the prefix', `whk_${'0190a000-0000-7000-8000-000000000000'}`],
  ['one character short', wellFormed.slice(0, -1)],
  ['one character long', `${wellFormed}A`],
  ['another prefix', `whx_${wellFormed.slice(4)}`],
  ['no prefix', wellFormed.slice(4)],
  ['a character outside base64url', `${wellFormed.slice(0, -1)}+`],
  ['padding', `${wellFormed.slice(0, -1)}=`],
  ['a space inside', `${wellFormed.slice(0, 20)} ${wellFormed.slice(21)}`],
  ['a key hash', 'a'.repeat(64)],
  ['2 KB of text', 'x'.repeat(2048)],
];

describe('a value that cannot be a key', () => {
  it.each(malformed)("is refused with Error('Unauthorized') without a store read: %s", async (_, value) => {
    const before = storeRequests;
    await expect(handler(authorizerEvent(keyHeader(value)), {} as Context)).rejects.toThrow(new Error('Unauthorized'));
    expect(storeRequests).toBe(before);
  });

  it('is told apart from a well-formed unknown key, which costs one store read and is refused the same way', async () => {
    const before = storeRequests;
    await expect(handler(authorizerEvent(keyHeader(generateApiKey().key)), {} as Context)).rejects.toThrow(new Error('Unauthorized'));
    expect(storeRequests).toBe(before + 1);
  });

  it('does not stop a real key from being read and accepted', async () => {
    const account = randomAccount();
    const { key } = await createApiKey(account);
    // The first use also records when the key was last used: one more request, at most once an hour.
    const first = storeRequests;
    expect((await handler(authorizerEvent(keyHeader(key)), {} as Context)).principalId).toBe(account);
    expect(storeRequests).toBe(first + 2);
    const before = storeRequests;
    expect((await handler(authorizerEvent(keyHeader(key)), {} as Context)).principalId).toBe(account);
    expect(storeRequests).toBe(before + 1);
  });
});
