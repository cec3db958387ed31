import type { TestClient } from '../../support/local-service';

export type HttpResponse = Awaited<ReturnType<TestClient['call']>>;

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// Written out rather than taken from node:http, so that the service's own table is checked, not reused.
const REASON_PHRASES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
};

/**
 * The error contract: the status, a JSON body of exactly `{message, statusCode, error}` with the
 * standard reason phrase, no stack trace, and an x-request-id. `field`, when given, must be named
 * in the message as a whole word (validation errors). Returns the message.
 */
export function expectError(response: HttpResponse, status: number, field?: string): string {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { message: expect.any(String), statusCode: status, error: REASON_PHRASES[status] },
  });
  expect(response.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(response.headers.get('x-request-id')).toMatch(UUID_PATTERN);
  const message: string = response.body.message;
  expect(message).not.toMatch(/\n\s+at |\.ts:\d+/);
  if (field !== undefined) expect(message).toMatch(new RegExp(`\\b${field.replace(/[.[\]]/g, '\\$&')}\\b`));
  return message;
}

export const WEBHOOK_KEYS = [
  'chainId',
  'createdAt',
  'description',
  'eventType',
  'id',
  'includeInternalTxs',
  'includeLogs',
  'metadata',
  'name',
  'status',
  'url',
];

/** Every webhook in every response has exactly the spec's fields, metadata included. */
export function expectWebhookShape(webhook: Record<string, any>): void {
  expect(Object.keys(webhook).sort()).toEqual(WEBHOOK_KEYS);
  expect(Object.keys(webhook.metadata).sort()).toEqual(['addresses', 'eventSignatures']);
}
