import { randomBytes } from 'node:crypto';
import { ReceiveMessageCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { QueuedDelivery, QueueRecord } from '../../lib/deliveries/queue';
import { SqsDeliveryQueue } from '../../lib/deliveries/sqs-queue';
import { LocalDeliveryQueue } from '../../infra/local/local-queue';
import { startQueueEndpoint, type QueueEndpoint } from '../../infra/local/queue-endpoint';

const credential = { secret: randomBytes(32).toString('hex'), file: '/data-dir/store-credential' };
let queue: LocalDeliveryQueue;
let signed: QueueEndpoint;
let open: QueueEndpoint;

beforeEach(async () => {
  queue = new LocalDeliveryQueue({ visibilityTimeoutSeconds: 30, maxReceiveCount: 5 });
  signed = await startQueueEndpoint(queue, { port: 0, host: '127.0.0.1', credential });
  open = await startQueueEndpoint(queue, { port: 0, host: '127.0.0.1' });
});
afterEach(async () => {
  await signed.close();
  await open.close();
  queue.close();
});

/** A client of the endpoint as producers create one locally: its origin as the endpoint, signing with the store's secret. */
const clientOf = (endpoint: QueueEndpoint, secretAccessKey = credential.secret) =>
  new SQSClient({ region: 'us-east-1', endpoint: new URL(endpoint.url).origin, maxAttempts: 1, credentials: { accessKeyId: 'local', secretAccessKey } });

const delivery = (account: string, messageId: string): QueuedDelivery => ({ account, webhookId: `wh-${account}`, messageId, at: Date.now() });

const sendBatch = (endpoint: QueueEndpoint, bodies: string[], client = clientOf(endpoint)) =>
  client.send(
    new SendMessageBatchCommand({
      QueueUrl: endpoint.url,
      Entries: bodies.map((body, index) => ({ Id: String(index), MessageBody: body, DelaySeconds: 0, MessageGroupId: 'acct-a' })),
    }),
  );

const bodiesOf = (records: QueueRecord[]) => records.map((record) => JSON.parse(record.body) as QueuedDelivery);

const batchRequest = (headers: Record<string, string> = {}, body = '{"QueueUrl":"q","Entries":[]}') =>
  ({ method: 'POST', headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessageBatch', ...headers }, body }) as const;

describe('the local queue endpoint', () => {
  it('queues the entries of a SendMessageBatch signed with the credential, each in its account', async () => {
    const sent = [delivery('acct-a', 'm-1'), delivery('acct-b', 'm-2')];
    const { Successful, Failed } = await sendBatch(signed, sent.map((one) => JSON.stringify(one)));
    expect(Failed).toEqual([]);
    expect(Successful).toEqual([expect.objectContaining({ Id: '0', MessageId: expect.any(String) }), expect.objectContaining({ Id: '1' })]);
    const records = await queue.receive(10, 0);
    expect(bodiesOf(records)).toEqual(expect.arrayContaining(sent));
    expect(records.map((record) => record.attributes.MessageGroupId).sort()).toEqual(['acct-a', 'acct-b']);
  });

  it('takes what SqsDeliveryQueue sends, delays included', async () => {
    const producer = new SqsDeliveryQueue(clientOf(signed), signed.url);
    const due = delivery('acct-a', 'm-due');
    const later = { ...delivery('acct-a', 'm-later'), at: Date.now() + 60_000 };
    await producer.send([due, later]);
    expect(bodiesOf(await queue.receive(10, 0))).toEqual([due]);
    expect(queue.stats()).toMatchObject({ delayed: 1 });
  });

  it('reports an entry whose body is not a queued delivery as failed, and queues the others', async () => {
    const good = delivery('acct-a', 'm-1');
    const { Successful, Failed } = await sendBatch(signed, ['{"hello":"world"}', JSON.stringify(good), 'not json']);
    expect(Successful!.map(({ Id }) => Id)).toEqual(['1']);
    expect(Failed).toEqual([
      expect.objectContaining({ Id: '0', Code: 'InvalidMessageContents', SenderFault: true }),
      expect.objectContaining({ Id: '2', Code: 'InvalidMessageContents', SenderFault: true }),
    ]);
    expect(bodiesOf(await queue.receive(10, 0))).toEqual([good]);
  });

  it('answers any other operation with UnsupportedOperation', async () => {
    await expect(clientOf(signed).send(new ReceiveMessageCommand({ QueueUrl: signed.url }))).rejects.toMatchObject({
      name: 'UnsupportedOperation',
      $metadata: { httpStatusCode: 400 },
    });
  });

  it('refuses a client signing with another secret, naming the file that holds the right one', async () => {
    await expect(sendBatch(signed, [JSON.stringify(delivery('acct-a', 'm-1'))], clientOf(signed, 'local'))).rejects.toMatchObject({
      name: 'InvalidSecurity',
      $metadata: { httpStatusCode: 403 },
      message: expect.stringContaining(credential.file),
    });
    expect(queue.stats()).toMatchObject({ visible: 0 });
  });

  it('refuses a request without a signature', async () => {
    const response = await fetch(new URL(signed.url).origin, batchRequest());
    expect(response.status).toBe(403);
  });

  it.each([
    ['with a credential', () => signed],
    ['without one', () => open],
  ])('refuses a request with an Origin header, %s', async (_, endpoint) => {
    const response = await fetch(new URL(endpoint().url).origin, batchRequest({ origin: 'http://page.example' }));
    expect(response.status).toBe(403);
    expect([...response.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });

  it('without a credential, serves requests unsigned', async () => {
    const body = JSON.stringify({ QueueUrl: open.url, Entries: [{ Id: 'a', MessageBody: JSON.stringify(delivery('acct-a', 'm-1')) }] });
    const response = await fetch(new URL(open.url).origin, batchRequest({}, body));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ Successful: [{ Id: 'a' }], Failed: [] });
    expect(queue.stats()).toMatchObject({ visible: 1 });
  });

  it('answers 413 to a body over its bound', async () => {
    const response = await fetch(new URL(open.url).origin, batchRequest({}, 'x'.repeat(1024 * 1024 + 64 * 1024 + 1)));
    expect(response.status).toBe(413);
  });
});
