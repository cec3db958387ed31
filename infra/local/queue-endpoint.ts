import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseQueuedDelivery, type QueuedDelivery, type QueueSender } from '../../lib/deliveries/queue';
import { portInUse } from './embedded-dynamodb';
import { checkedRequest, type StoreCredential } from './signed-request';

export interface QueueEndpoint {
  port: number;
  /** The queue's URL, the configuration's `deliveryQueueUrl`: the SQS client posts to its origin. */
  url: string;
  close(): Promise<void>;
}

export interface QueueEndpointOptions {
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** The credential every request must be signed with (DATA_DIR's store credential); absent, any request but a browser's is served. */
  credential?: StoreCredential;
}

/** The local queue's URL on `port`, in SQS's form (an account and a queue name as its path). */
export const localQueueUrl = (port: number, host = '127.0.0.1') => `http://${host}:${port}/000000000000/deliveries`;

/** SQS's limit on a batch's bodies, and room for the JSON around them. */
const MAX_REQUEST_BYTES = 1024 * 1024 + 64 * 1024;
const MAX_BATCH_ENTRIES = 10;
const SEND_MESSAGE_BATCH = 'AmazonSQS.SendMessageBatch';

/**
 * `npm start`'s delivery queue as the gateway's processes reach it: SendMessageBatch of SQS's JSON
 * protocol (AWS JSON 1.0), on loopback, so that producers send with the SQS client as on AWS. Checked
 * as the embedded store checks its requests (signed-request.ts's checkedRequest).
 */
export async function startQueueEndpoint(queue: QueueSender, options: QueueEndpointOptions): Promise<QueueEndpoint> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((request, response) => {
    // Whatever a request holds, it costs that request alone.
    serve(queue, options.credential, request, response).catch(() => response.destroy());
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? portInUse(options.port, 'DELIVERY_QUEUE_URL') : error));
    server.listen(options.port, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: localQueueUrl(port, host),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}

async function serve(queue: QueueSender, credential: StoreCredential | undefined, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const checked = await checkedRequest(request, { credential, serves: 'queue', maxBytes: MAX_REQUEST_BYTES, readBody: true });
  if ('refusal' in checked) return refuse(response, checked.refusal.status, checked.refusal.message);
  const body = checked.body!;
  if (request.method !== 'POST' || request.headers['x-amz-target'] !== SEND_MESSAGE_BATCH) {
    return answerError(response, 400, 'UnsupportedOperation', `this local queue answers ${SEND_MESSAGE_BATCH} only`);
  }
  const entries = entriesOf(body);
  if (!Array.isArray(entries)) return answerError(response, 400, entries, 'a SendMessageBatch request takes 1 to 10 entries, each with an Id and a MessageBody');
  const deliveries: QueuedDelivery[] = [];
  const Successful: { Id: string; MessageId: string; MD5OfMessageBody: string }[] = [];
  const Failed: { Id: string; Code: string; Message: string; SenderFault: boolean }[] = [];
  for (const { Id, MessageBody } of entries) {
    const delivery = queuedDeliveryIn(MessageBody);
    if (!delivery) {
      Failed.push({ Id, Code: 'InvalidMessageContents', Message: 'the body is not a queued delivery', SenderFault: true });
      continue;
    }
    deliveries.push(delivery);
    Successful.push({ Id, MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(MessageBody).digest('hex') });
  }
  await queue.send(deliveries);
  answer(response, 200, { Successful, Failed });
}

interface BatchEntry {
  Id: string;
  MessageBody: string;
}

/** The request's entries, or SQS's error for a request without usable ones. */
function entriesOf(body: Buffer): BatchEntry[] | SqsError {
  let request: unknown;
  try {
    request = JSON.parse(body.toString('utf8'));
  } catch {
    return 'InvalidParameterValue';
  }
  const entries = (request as { Entries?: unknown } | null)?.Entries;
  if (!Array.isArray(entries) || entries.length === 0) return 'EmptyBatchRequest';
  if (entries.length > MAX_BATCH_ENTRIES) return 'TooManyEntriesInBatchRequest';
  const wellFormed = entries.every((entry: Partial<BatchEntry> | null) => typeof entry?.Id === 'string' && typeof entry.MessageBody === 'string');
  return wellFormed ? (entries as BatchEntry[]) : 'InvalidParameterValue';
}

/** What the consumer can take: a body the service's producers wrote. */
function queuedDeliveryIn(body: string): QueuedDelivery | undefined {
  try {
    return parseQueuedDelivery(body);
  } catch {
    return undefined;
  }
}

/**
 * Refused before it is served: a 403 the SDK does not retry. The connection is closed: what is left
 * of a refused request's body is never read.
 */
function refuse(response: ServerResponse, status: 403 | 413, message: string): void {
  answerError(response, status, status === 403 ? 'InvalidSecurity' : 'BatchRequestTooLong', message, { connection: 'close' });
}

/** SQS's errors this endpoint answers, with their codes of SQS's query protocol. */
const SQS_ERRORS = {
  InvalidSecurity: 'InvalidSecurity',
  BatchRequestTooLong: 'AWS.SimpleQueueService.BatchRequestTooLong',
  UnsupportedOperation: 'AWS.SimpleQueueService.UnsupportedOperation',
  EmptyBatchRequest: 'AWS.SimpleQueueService.EmptyBatchRequest',
  TooManyEntriesInBatchRequest: 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
  InvalidParameterValue: 'InvalidParameterValue',
} as const;
type SqsError = keyof typeof SQS_ERRORS;

/** In SQS's JSON error shape, with the query code in x-amzn-query-error as SQS sends it: the SDK names its error after them. */
function answerError(response: ServerResponse, status: number, error: SqsError, message: string, headers: Record<string, string> = {}): void {
  answer(response, status, { __type: `com.amazonaws.sqs#${error}`, message }, { 'x-amzn-query-error': `${SQS_ERRORS[error]};Sender`, ...headers });
}

function answer(response: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}
