import { randomBytes, randomUUID } from 'node:crypto';
import { getAddress } from 'viem';
import type { APIGatewayProxyEvent } from 'aws-lambda';

export const randomAddress = () => `0x${randomBytes(20).toString('hex')}`;

/** A random address in its EIP-55 checksummed spelling, with at least two letters of each case. */
export function randomChecksummedAddress(): string {
  for (;;) {
    const address = getAddress(randomAddress());
    if (/[a-f].*[a-f]/.test(address) && /[A-F].*[A-F]/.test(address)) return address;
  }
}

/** The checksummed address with one letter's case flipped: mixed-case, its checksum does not hold. */
export function withChecksumTypo(checksummed: string): string {
  const index = checksummed.search(/[a-fA-F]/);
  const letter = checksummed[index]!;
  const flipped = letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase();
  return `${checksummed.slice(0, index)}${flipped}${checksummed.slice(index + 1)}`;
}
export const randomEventSignature = () => `0x${randomBytes(32).toString('hex')}`;
export const randomAccount = (prefix = 'acct') => `${prefix}-${randomBytes(6).toString('hex')}`;

/** A valid create-webhook body; override any field. */
export function webhookInput(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: 'https://receiver.example.com/hooks',
    chainId: '43114',
    eventType: 'address_activity',
    metadata: { addresses: [randomAddress()] },
    ...overrides,
  };
}

/** An API Gateway proxy event as the gateway sends it after the authorizer let the request in. */
export function apiEvent(options: {
  account?: string;
  method?: string;
  resource?: string;
  query?: Record<string, string | string[]>;
  pathParameters?: Record<string, string>;
  body?: unknown;
}): APIGatewayProxyEvent {
  const multi = options.query
    ? Object.fromEntries(Object.entries(options.query).map(([name, value]) => [name, Array.isArray(value) ? value : [value]]))
    : null;
  const requestId = randomUUID();
  return {
    resource: options.resource ?? '/',
    path: options.resource ?? '/',
    httpMethod: options.method ?? 'GET',
    headers: {},
    multiValueHeaders: {},
    queryStringParameters: multi && Object.fromEntries(Object.entries(multi).map(([name, values]) => [name, values.at(-1)!])),
    multiValueQueryStringParameters: multi,
    pathParameters: options.pathParameters ?? null,
    stageVariables: null,
    requestContext: {
      requestId,
      authorizer: options.account === undefined ? null : { accountId: options.account },
    } as unknown as APIGatewayProxyEvent['requestContext'],
    body: options.body === undefined ? null : typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
    isBase64Encoded: false,
  };
}
