import { STATUS_CODES } from 'node:http';
import type { apiErrorBody } from './schemas/error';
import type * as z from './schemas/zod';

/** Error names of the AWS SDK that mean "DynamoDB cannot take this now", not "the request was wrong". */
export const UNAVAILABLE_ERROR_NAMES: ReadonlySet<string> = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
]);
/** Node's codes for a connection that could not be made or was lost. */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * The errors a request can end in. Domain code throws these; the HTTP layer turns them into
 * `{ message, statusCode, error }` responses. Messages are shown to callers: never put a key,
 * a secret or a DynamoDB detail in one.
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequest extends ApiError {
  constructor(message: string) {
    super(400, message);
  }
}

export class Unauthorized extends ApiError {
  constructor(message = INVALID_API_KEY_MESSAGE) {
    super(401, message);
  }
}

export class Forbidden extends ApiError {
  constructor(message: string) {
    super(403, message);
  }
}

export class NotFound extends ApiError {
  constructor(message: string) {
    super(404, message);
  }
}

export const webhookNotFound = (id: string) => new NotFound(`Webhook ${id} not found`);

export class Conflict extends ApiError {
  constructor(message: string) {
    super(409, message);
  }
}

export class PayloadTooLarge extends ApiError {
  constructor(message: string) {
    super(413, message);
  }
}

export class UnsupportedMediaType extends ApiError {
  constructor(message: string) {
    super(415, message);
  }
}

export class TooManyRequests extends ApiError {
  constructor(retryAfterSeconds: number, message = TOO_MANY_REQUESTS_MESSAGE) {
    super(429, message, {
      'Retry-After': String(retryAfterSeconds),
    });
  }
}

export class ServiceUnavailable extends ApiError {
  constructor(retryAfterSeconds = 1, message = SERVICE_UNAVAILABLE_MESSAGE) {
    super(503, message, {
      'Retry-After': String(retryAfterSeconds),
    });
  }
}

// Messages the gateway itself answers with, locally and on API Gateway (its gateway responses).
// They are static because API Gateway's response templates cannot say more.

/** One message for a missing, unknown or revoked key, so that keys cannot be probed. */
export const INVALID_API_KEY_MESSAGE = 'Missing or invalid API key in the x-service-api-key header';
export const TOO_MANY_REQUESTS_MESSAGE = 'Too many requests: slow down and retry after the time in the Retry-After header';
export const ACCESS_DENIED_MESSAGE = 'The API key is not allowed to call this operation';
export const NO_ROUTE_MESSAGE = 'No route matches this method and path';
export const methodNotAllowedMessage = (allowed: string[]) => `This path allows only ${allowed.join(', ')}`;
export const SERVICE_UNAVAILABLE_MESSAGE = 'The service is temporarily unavailable; retry after the time in the Retry-After header';
export const INTERNAL_ERROR_MESSAGE = 'An unexpected error occurred; it has been logged';

export type ErrorBody = z.infer<typeof apiErrorBody>;

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { message, statusCode, error: STATUS_CODES[statusCode] ?? 'Error' };
}
