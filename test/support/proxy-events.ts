import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { Route } from '../../lib/routes';
import { apiEvent } from './factories';

export interface RouteRequest {
  pathParameters?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
}

/**
 * A REST API proxy event for `route` as API Gateway sends it to the operation's Lambda once the
 * authorizer allowed the request: the request's headers, and the authorizer's context.
 */
export function proxyEvent(
  route: Route,
  { pathParameters, query, body }: RouteRequest,
  { stage, headers, authorizer }: { stage: string; headers: Record<string, string>; authorizer: Record<string, string> },
): APIGatewayProxyEvent {
  const event = apiEvent({ method: route.method, resource: route.path, pathParameters, query, body });
  const requestPath = route.path.replace(/\{(\w+)\}/g, (_, name: string) => pathParameters![name]!);
  return {
    ...event,
    path: requestPath,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    requestContext: { ...event.requestContext, resourcePath: route.path, httpMethod: route.method, path: `/${stage}${requestPath}`, stage, authorizer },
  };
}

/** A response as two answers to the same request compare: its request id aside, the body's `generated` fields (ids, times, secrets) by their type. */
export function comparableResponse({ statusCode, headers, body }: APIGatewayProxyResult, generated: string[] = []) {
  const { 'x-request-id': _requestId, ...otherHeaders } = headers as Record<string, string>;
  const fields = Object.entries(JSON.parse(body)).map(([name, value]) => [name, generated.includes(name) ? typeof value : value]);
  return { statusCode, headers: otherHeaders, body: Object.fromEntries(fields) };
}
