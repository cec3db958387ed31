import type { APIGatewayProxyResult } from 'aws-lambda';
import { ApiError, errorBody, INTERNAL_ERROR_MESSAGE, NETWORK_ERROR_CODES, ServiceUnavailable, UNAVAILABLE_ERROR_NAMES } from '../errors';
import { logger } from '../logger';

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyResult {
  return {
    statusCode,
    // Responses carry account data and secrets: never let a proxy or browser keep them; and never let
    // a browser read one as anything but JSON (the console shares their origin). Written out, not
    // spread from a constant: a second spread in one literal is V8's slow path.
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', ...headers },
    body: JSON.stringify(body),
  };
}

export function errorResponse(error: ApiError, headers: Record<string, string> = {}): APIGatewayProxyResult {
  return jsonResponse(error.statusCode, errorBody(error.statusCode, error.message), { ...error.headers, ...headers });
}

/** DynamoDB or Secrets Manager (a page-token key, a chain's RPC URL) throttled, failing on its side or out of reach. */
function isServiceUnavailable(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const { code, $metadata } = error as Error & { code?: string; $metadata?: { httpStatusCode?: number } };
  return (
    UNAVAILABLE_ERROR_NAMES.has(error.name) ||
    (code !== undefined && NETWORK_ERROR_CODES.has(code)) ||
    ($metadata?.httpStatusCode ?? 0) >= 500
  );
}

/** The AWS service an SDK error came from, by its class (`SecretsManagerServiceException`); `network` for a request that got no answer. */
function serviceOf(error: Error): string {
  for (let prototype = Object.getPrototypeOf(error); prototype && prototype !== Error.prototype; prototype = Object.getPrototypeOf(prototype)) {
    const service = /^(\w+)ServiceException$/.exec(prototype.constructor.name)?.[1];
    if (service) return service;
  }
  return 'network';
}

/** middy's error when the function's time runs out before the handler has answered (its `timeoutEarlyResponse`). */
function isFunctionTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === 'TimeoutError' && (error.cause as { package?: string } | undefined)?.package === '@middy/core';
}

/**
 * Turns anything thrown while serving a request into the error the caller sees. Typed errors pass
 * as they are; the function running out of time, or DynamoDB or Secrets Manager being throttled or
 * unreachable, is a 503 (logged with the service); everything else is a 500 whose details go to the log only.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isFunctionTimeout(error)) {
    logger.warn('function timed out before answering');
    return new ServiceUnavailable();
  }
  if (isServiceUnavailable(error)) {
    const { name, code, message, $metadata } = error as Error & { code?: string; $metadata?: { attempts?: number } };
    logger.warn('AWS service unavailable', { service: serviceOf(error), errorName: name, code, detail: message, attempts: $metadata?.attempts });
    return new ServiceUnavailable();
  }
  logger.error('Unexpected error', error as Error);
  return new ApiError(500, INTERNAL_ERROR_MESSAGE);
}
