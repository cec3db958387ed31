import {
  ConditionalCheckFailedException,
  DynamoDBServiceException,
  ProvisionedThroughputExceededException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { SecretsManagerServiceException } from '@aws-sdk/client-secrets-manager';
import { ApiError, BadRequest, INTERNAL_ERROR_MESSAGE, NotFound, TooManyRequests } from '../../../lib/errors';
import { errorResponse, toApiError } from '../../../lib/http/responses';
import { logger } from '../../../lib/logger';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';

const metadata = (httpStatusCode: number) => ({ httpStatusCode, requestId: 'req-1', attempts: 1, totalRetryDelay: 0 });

/** An error as Node's http client rejects with when nothing listens on the port. */
function networkError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:9`), { code, errno: -111, syscall: 'connect' });
}

/** The value of a header, looked up without regard to case. */
function header(headers: Record<string, unknown> | undefined, name: string): unknown {
  const entry = Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name.toLowerCase());
  return entry?.[1];
}

function expectServiceUnavailable(error: ApiError): void {
  expect(error.statusCode).toBe(503);
  const retryAfter = header(error.headers, 'Retry-After');
  expect(retryAfter).toMatch(/^[0-9]+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  const response = errorResponse(error);
  expect(JSON.parse(response.body)).toEqual({ message: error.message, statusCode: 503, error: 'Service Unavailable' });
  expect(header(response.headers, 'Retry-After')).toBe(retryAfter);
}

describe('toApiError', () => {
  it('passes an ApiError through unchanged', () => {
    const error = new NotFound('Webhook x not found');
    expect(toApiError(error)).toBe(error);
  });

  it('passes an ApiError with headers through with its headers', () => {
    const error = new TooManyRequests(7);
    expect(toApiError(error).headers).toEqual({ 'Retry-After': '7' });
  });

  it("maps middy's timeout, the function's time running out before it answered, to 503, logged as such and not as the store's", async () => {
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    try {
      const slow = middy(() => new Promise<never>(() => undefined));
      const context = { getRemainingTimeInMillis: () => 50 } as unknown as Context;
      const thrown = await slow({}, context).then(
        () => undefined,
        (error: unknown) => error,
      );
      expectServiceUnavailable(toApiError(thrown));
      expect(warn.mock.calls).toEqual([['function timed out before answering']]);
    } finally {
      warn.mockRestore();
    }
  });

  it('maps ProvisionedThroughputExceededException to 503 with Retry-After', () => {
    const error = new ProvisionedThroughputExceededException({ message: 'throughput exceeded', $metadata: metadata(400) });
    expectServiceUnavailable(toApiError(error));
  });

  it('maps ThrottlingException to 503 with Retry-After', () => {
    const error = new ThrottlingException({ message: 'rate exceeded', $metadata: metadata(400) });
    expectServiceUnavailable(toApiError(error));
  });

  it('maps an SDK error of any name with HTTP status 500 to 503 with Retry-After', () => {
    const error = new DynamoDBServiceException({
      name: 'SomethingNewException',
      $fault: 'server',
      message: 'internal failure',
      $metadata: metadata(500),
    });
    expectServiceUnavailable(toApiError(error));
  });

  it('maps a connection refused network error to 503 with Retry-After', () => {
    expectServiceUnavailable(toApiError(networkError('ECONNREFUSED')));
  });

  it('maps a connection reset network error to 503 with Retry-After', () => {
    expectServiceUnavailable(toApiError(networkError('ECONNRESET')));
  });

  it('logs which service was unavailable: DynamoDB, Secrets Manager, or no answer at all', () => {
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    try {
      const secrets = new SecretsManagerServiceException({ name: 'InternalServiceError', $fault: 'server', $metadata: metadata(500), message: 'internal' });
      for (const error of [new ThrottlingException({ $metadata: metadata(400), message: 'slow down' }), secrets, networkError('ECONNREFUSED')]) expectServiceUnavailable(toApiError(error));
      expect(warn.mock.calls.map(([message, details]) => [message, (details as { service: string }).service])).toEqual([
        ['AWS service unavailable', 'DynamoDB'],
        ['AWS service unavailable', 'SecretsManager'],
        ['AWS service unavailable', 'network'],
      ]);
    } finally {
      warn.mockRestore();
    }
  });

  it('maps an SDK client error (HTTP 400) that escaped the domain code to a generic 500', () => {
    const error = new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: metadata(400) });
    const mapped = toApiError(error);
    expect(mapped.statusCode).toBe(500);
    expect(mapped.message).toBe(INTERNAL_ERROR_MESSAGE);
  });

  it('maps any other Error to 500 with the generic message, leaking neither its text nor its stack', () => {
    const error = new TypeError("Cannot read properties of undefined (reading 'secretValue')");
    const mapped = toApiError(error);
    expect(mapped.statusCode).toBe(500);
    expect(mapped.message).toBe(INTERNAL_ERROR_MESSAGE);
    const response = errorResponse(mapped);
    expect(JSON.parse(response.body)).toEqual({ message: INTERNAL_ERROR_MESSAGE, statusCode: 500, error: 'Internal Server Error' });
    expect(response.body).not.toContain('secretValue');
    expect(response.body).not.toContain('TypeError');
    expect(response.body).not.toContain(error.stack!.split('\n')[1]!.trim());
    expect(header(response.headers, 'Retry-After')).toBeUndefined();
  });

  it('maps a thrown non-Error value to 500 with the generic message', () => {
    const mapped = toApiError('database password is hunter2');
    expect(mapped.statusCode).toBe(500);
    expect(errorResponse(mapped).body).not.toContain('hunter2');
  });
});

describe('errorResponse', () => {
  it('answers with content-type application/json', () => {
    expect(header(errorResponse(new BadRequest('bad')).headers, 'content-type')).toBe('application/json');
  });

  it('answers with exactly message, statusCode and error in the body', () => {
    const response = errorResponse(new BadRequest('Invalid query parameter pageSize: must be an integer from 1 to 100'));
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({
      message: 'Invalid query parameter pageSize: must be an integer from 1 to 100',
      statusCode: 400,
      error: 'Bad Request',
    });
  });

  it.each([
    [400, 'Bad Request'],
    [401, 'Unauthorized'],
    [403, 'Forbidden'],
    [404, 'Not Found'],
    [413, 'Payload Too Large'],
    [429, 'Too Many Requests'],
    [500, 'Internal Server Error'],
    [502, 'Bad Gateway'],
    [503, 'Service Unavailable'],
  ])('gives status %i the reason phrase %s and the same statusCode in the body', (status, reason) => {
    const response = errorResponse(new ApiError(status, 'message'));
    expect(response.statusCode).toBe(status);
    expect(JSON.parse(response.body)).toEqual({ message: 'message', statusCode: status, error: reason });
  });

  it("carries the error's headers, such as Retry-After", () => {
    expect(header(errorResponse(new TooManyRequests(3)).headers, 'Retry-After')).toBe('3');
  });
});
