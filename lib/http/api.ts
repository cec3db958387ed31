import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type * as z from '../schemas/zod';
import { entryPoint } from '../entry-point';
import { Unauthorized } from '../errors';
import { lambdaContextInLogs } from '../logger';
import type { Route } from '../routes';
import { jsonBody, queryParameters, validated } from './request-input';
import { errorResponse, jsonResponse, toApiError } from './responses';

type Output<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What an operation receives: the caller's account and key, and its validated input. */
export interface OperationInput<R extends Route> {
  account: string;
  /** The id of the key that made the call, as the authorizer names it in its context (absent only in an event the gateway did not make). */
  callerKeyId?: string;
  query: Output<R['query']>;
  path: Output<R['pathParameters']>;
  body: Output<R['body']>;
}

type ApiEvent<R extends Route> = APIGatewayProxyEvent & { input: OperationInput<R> };

/**
 * Wraps an operation in the middleware every handler shares: request-scoped logging, error mapping,
 * input validation against the route's schemas, and a JSON response with the route's success
 * status. Every response, error or not, echoes API Gateway's request id as x-request-id, so that a
 * caller can quote it and we can find the log line.
 */
export function api<R extends Route>(route: R, operation: (input: OperationInput<R>) => Promise<z.output<R['response']>>) {
  return entryPoint(
    route.operationId,
    middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
      .use(lambdaContextInLogs())
      .use(errorResponses())
      .use(validatedInput(route))
      .handler(async (event) => jsonResponse(route.successStatus, await operation((event as ApiEvent<R>).input), requestIdHeader(event))),
  );
}

type ApiMiddleware = MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult>;

const requestIdHeader = (event: APIGatewayProxyEvent) => ({ 'x-request-id': event.requestContext.requestId });

function errorResponses(): ApiMiddleware {
  return {
    onError: (request) => {
      request.response = errorResponse(toApiError(request.error), requestIdHeader(request.event));
    },
  };
}

function validatedInput<R extends Route>(route: R): ApiMiddleware {
  return {
    before: (request) => {
      const event = request.event;
      const account = event.requestContext.authorizer?.accountId;
      // The authorizer always sets it; a request without one did not come through the gateway.
      if (typeof account !== 'string' || account === '') throw new Unauthorized();
      const keyId = event.requestContext.authorizer?.keyId;
      const input = {
        account,
        callerKeyId: typeof keyId === 'string' && keyId !== '' ? keyId : undefined,
        query: validated(route.query, queryParameters(event), 'query parameter'),
        path: validated(route.pathParameters, event.pathParameters ?? {}, 'path parameter'),
        body: route.body ? validated(route.body, jsonBody(event), 'body field') : undefined,
      };
      (event as ApiEvent<R>).input = input as OperationInput<R>;
    },
  };
}
