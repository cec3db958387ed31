import {
  ACCESS_DENIED_MESSAGE,
  INTERNAL_ERROR_MESSAGE,
  INVALID_API_KEY_MESSAGE,
  NO_ROUTE_MESSAGE,
  SERVICE_UNAVAILABLE_MESSAGE,
  TOO_MANY_REQUESTS_MESSAGE,
  errorBody,
} from '../lib/errors';

/**
 * Every response API Gateway produces itself, in the API's error shape. API Gateway's templates are
 * static (no VTL) apart from `$context` variables, so each type has a fixed status: the body's
 * `statusCode` must equal it. The messages are the local gateway's where both produce the error.
 */
export interface GatewayResponseDefinition {
  type: string;
  statusCode: number;
  /** A fixed message, or API Gateway's own (`$context.error.messageString`, already a JSON string). */
  message: string | { fromContext: true };
  headers?: Record<string, string>;
}

const fromContext = { fromContext: true } as const;
const retryAfter = { 'Retry-After': '1' };

/** Sent with every gateway response, as the API's own answers carry it (lib/http/responses.ts): the console shares their origin. */
const NOSNIFF = { 'X-Content-Type-Options': 'nosniff' };

export const gatewayResponses: GatewayResponseDefinition[] = ([
  { type: 'DEFAULT_4XX', statusCode: 400, message: fromContext },
  { type: 'DEFAULT_5XX', statusCode: 500, message: INTERNAL_ERROR_MESSAGE },
  { type: 'BAD_REQUEST_BODY', statusCode: 400, message: fromContext },
  { type: 'BAD_REQUEST_PARAMETERS', statusCode: 400, message: fromContext },
  // A missing header (identity source) or an authorizer that threw "Unauthorized".
  { type: 'UNAUTHORIZED', statusCode: 401, message: INVALID_API_KEY_MESSAGE },
  // The authorizer accepted a key that has no API Gateway API key (not imported for this stage).
  { type: 'INVALID_API_KEY', statusCode: 401, message: INVALID_API_KEY_MESSAGE },
  { type: 'ACCESS_DENIED', statusCode: 403, message: ACCESS_DENIED_MESSAGE },
  // What API Gateway answers for a path or method it has no resource for.
  { type: 'MISSING_AUTHENTICATION_TOKEN', statusCode: 404, message: NO_ROUTE_MESSAGE },
  { type: 'RESOURCE_NOT_FOUND', statusCode: 404, message: NO_ROUTE_MESSAGE },
  { type: 'REQUEST_TOO_LARGE', statusCode: 413, message: "Request body is larger than the gateway's limit of 10485760 bytes" },
  { type: 'UNSUPPORTED_MEDIA_TYPE', statusCode: 415, message: fromContext },
  { type: 'THROTTLED', statusCode: 429, message: TOO_MANY_REQUESTS_MESSAGE, headers: retryAfter },
  { type: 'QUOTA_EXCEEDED', statusCode: 429, message: "The API key's usage-plan quota for this period is used up" },
  { type: 'INTEGRATION_FAILURE', statusCode: 502, message: 'The operation failed to answer; retry later' },
  // The authorizer could not reach the table, or an operation ran out of time: both transient.
  { type: 'AUTHORIZER_FAILURE', statusCode: 503, message: SERVICE_UNAVAILABLE_MESSAGE, headers: retryAfter },
  { type: 'INTEGRATION_TIMEOUT', statusCode: 503, message: SERVICE_UNAVAILABLE_MESSAGE, headers: retryAfter },
  { type: 'AUTHORIZER_CONFIGURATION_ERROR', statusCode: 500, message: INTERNAL_ERROR_MESSAGE },
  { type: 'API_CONFIGURATION_ERROR', statusCode: 500, message: INTERNAL_ERROR_MESSAGE },
] satisfies GatewayResponseDefinition[]).map((response) => ({ ...response, headers: { ...NOSNIFF, ...response.headers } }));

/** The response template: the error shape, with API Gateway's message substituted where asked. */
export function gatewayResponseTemplate({ statusCode, message }: GatewayResponseDefinition): string {
  const body = errorBody(statusCode, typeof message === 'string' ? message : '__MESSAGE__');
  return JSON.stringify(body).replace('"__MESSAGE__"', '$context.error.messageString');
}
