import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { DynamoDBClient, ListTablesCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ensureStoreCredential } from '../../infra/local/data-dir';
import { startEmbeddedDynamoDb, type EmbeddedDynamoDb } from '../../infra/local/embedded-dynamodb';
import { useTempDir } from '../support/temp-dir';

const dataDir = useTempDir('webhooks-store-access-');
let store: EmbeddedDynamoDb;
let inMemory: EmbeddedDynamoDb;
let secret: string;

beforeAll(async () => {
  const credentialFile = await ensureStoreCredential(dataDir());
  secret = readFileSync(credentialFile, 'utf8').trim();
  store = await startEmbeddedDynamoDb({ port: 0, directory: path.join(dataDir(), 'dynamodb'), credentialFile });
  inMemory = await startEmbeddedDynamoDb({ port: 0 });
});
afterAll(async () => {
  await store?.close();
  await inMemory?.close();
});

/** A client of `endpoint` signing with this secret, the way lib/store's client signs with DATA_DIR's credential. */
const clientWith = (endpoint: string, secretAccessKey: string) =>
  new DynamoDBClient({ endpoint, region: 'us-east-1', maxAttempts: 1, credentials: { accessKeyId: 'local', secretAccessKey } });

/** Calls `change` with each request the client sends, once signed. */
function afterSigning(client: DynamoDBClient, change: (request: { headers: Record<string, string>; body: Uint8Array }) => void): DynamoDBClient {
  type Handler = (args: { request: unknown }) => Promise<unknown>;
  const middleware = (next: Handler) => (args: { request: unknown }) => {
    change(args.request as never);
    return next(args);
  };
  client.middlewareStack.addRelativeTo(middleware as never, { relation: 'after', toMiddleware: 'httpSigningMiddleware' });
  return client;
}

const listTables = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.ListTables' };

describe('the embedded store refuses browsers', () => {
  it.each([
    ['with a credential', () => store],
    ['in memory', () => inMemory],
  ])('refuses a request with an Origin header, %s: 403 and no CORS headers', async (_, which) => {
    const response = await fetch(which().endpoint, { method: 'POST', headers: { ...listTables, origin: 'http://page.example' }, body: '{}' });
    expect(response.status).toBe(403);
    expect([...response.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
    expect(await response.json()).toMatchObject({ message: expect.stringContaining('Origin header') });
  });

  it('refuses a CORS preflight: 403 and no CORS headers', async () => {
    const response = await fetch(inMemory.endpoint, {
      method: 'OPTIONS',
      headers: { origin: 'http://page.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-amz-target' },
    });
    expect(response.status).toBe(403);
    expect([...response.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });
});

describe('a store with a credential serves only requests signed with it', () => {
  it('serves the SDK signing with the credential', async () => {
    await expect(clientWith(store.endpoint, secret).send(new ListTablesCommand({}))).resolves.toMatchObject({ TableNames: [] });
  });

  it('refuses the SDK signing with other credentials, naming the file that holds the right one', async () => {
    await expect(clientWith(store.endpoint, 'local').send(new ListTablesCommand({}))).rejects.toMatchObject({
      name: 'AccessDeniedException',
      $metadata: { httpStatusCode: 403 },
      message: expect.stringContaining(path.join(dataDir(), 'store-credential')),
    });
  });

  it('refuses a request without a signature', async () => {
    const response = await fetch(store.endpoint, { method: 'POST', headers: listTables, body: '{}' });
    expect(response.status).toBe(403);
    expect((await fetch(store.endpoint)).status).toBe(403);
  });

  it('refuses a signed request whose body was changed after signing', async () => {
    let sent = '';
    const client = afterSigning(clientWith(store.endpoint, secret), (request) => {
      sent = Buffer.from(request.body).toString().replace('"S":"a"', '"S":"b"');
      request.body = Buffer.from(sent);
    });
    const put = new PutItemCommand({ TableName: 'absent', Item: { id: { S: 'a' } } });
    await expect(client.send(put)).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    expect(sent).toContain('"S":"b"');
  });

  it('does not take the signature of one request for another', async () => {
    let headers: Record<string, string> = {};
    const client = afterSigning(clientWith(store.endpoint, secret), (request) => void (headers = { ...request.headers }));
    await client.send(new ListTablesCommand({}));
    delete headers['content-length'];
    const replayed = await fetch(store.endpoint, { method: 'POST', headers: { ...headers, 'x-amz-target': 'DynamoDB_20120810.DeleteTable' }, body: '{}' });
    expect(replayed.status).toBe(403);
  });
});

/** The head of a POST to the store, with these headers. */
const requestHead = (headers: Record<string, string>) =>
  `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries({ ...listTables, ...headers }).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;

/** Sends `parts` on a connection of its own, never ending it, and resolves with what came back once the store closed it. */
function sendUnfinished(endpoint: string, parts: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve) => {
    let received = '';
    const socket = connect(Number(new URL(endpoint).port), '127.0.0.1', () => {
      for (const part of parts) socket.write(part);
    });
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(received));
  });
}

/** The form of a signature, over nothing in particular: enough for the store to read the body, to check it. */
const signatureForm = {
  authorization: `AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
  'x-amz-date': '20260101T000000Z',
};
const BOUND = 16 * 1024 * 1024;

// Each request declares or starts a body it never finishes: a store that read it to its end would never answer.
describe('a store with a credential reads no more of a request than it must', () => {
  it.each([
    ['no Authorization header', {}],
    ['an Authorization header not of the SigV4 form', { authorization: 'Bearer whk_not-a-signature' }],
    ['a SigV4 Authorization header but no x-amz-date', { authorization: signatureForm.authorization }],
  ])('refuses a request with %s before reading its body', async (_, headers) => {
    const answer = await sendUnfinished(store.endpoint, [requestHead({ ...headers, 'content-length': '1000' })]);
    expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    expect(answer).toContain(path.join(dataDir(), 'store-credential'));
  });

  it('refuses a signature naming headers the request does not have, such as `constructor`, and goes on serving', async () => {
    const authorization = signatureForm.authorization.replace('SignedHeaders=host;x-amz-date', 'SignedHeaders=constructor;host;tostring;x-amz-date');
    const response = await fetch(store.endpoint, { method: 'POST', headers: { ...listTables, ...signatureForm, authorization }, body: '{}' });
    expect(response.status).toBe(403);
    await expect(clientWith(store.endpoint, secret).send(new ListTablesCommand({}))).resolves.toMatchObject({ TableNames: [] });
  });

  it('answers 413 to a body declared over its bound, reading none of it', async () => {
    const answer = await sendUnfinished(store.endpoint, [requestHead({ ...signatureForm, 'content-length': String(BOUND + 1) })]);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain(`a request body is at most ${BOUND} bytes`);
  });

  it('answers 413 as soon as a body of no declared length passes its bound, and closes the connection', async () => {
    // Chunked: one byte past the bound, and the body never ends.
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    const chunks = Array.from({ length: BOUND / chunk.length }, () => Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
    const answer = await sendUnfinished(store.endpoint, [requestHead({ ...signatureForm, 'transfer-encoding': 'chunked' }), ...chunks, '1\r\na\r\n']);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    await expect(clientWith(store.endpoint, secret).send(new ListTablesCommand({}))).resolves.toMatchObject({ TableNames: [] });
  });
});
