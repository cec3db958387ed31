import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import path from 'node:path';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';
import type { LocalGatewayBounds } from '../../lib/config/runtime';
import type { StageSettings } from '../../lib/config/stages';
import { ACCESS_DENIED_MESSAGE, ApiError, methodNotAllowedMessage, NO_ROUTE_MESSAGE, TooManyRequests, Unauthorized } from '../../lib/errors';
import { errorResponse, toApiError } from '../../lib/http/responses';
import { apiKeyFromHeaders, UNAUTHORIZED } from '../../lib/keys/authorize';
import { openApiDocument } from '../../lib/openapi/document';
import { HEALTH_CHECK, type Route } from '../../lib/routes';
import { apiReference } from './api-reference';
import { consoleAssets } from './console-assets';
import { CONSOLE_DIST } from '../console-build';
import { boundConnections, timeoutOptions } from './gateway-connections';
import { logRequest, logsRequests } from './local-logger';
import { readBoundedBody } from './request-body';
import { routeTable } from './route-table';
import type { Throttle } from './token-bucket';

type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type AuthorizerHandler = (event: APIGatewayRequestAuthorizerEvent, context: Context) => Promise<APIGatewayAuthorizerResult>;

export interface LocalGatewayOptions {
  routes: Route[];
  /** Names the stage in events, and gives each invocation's Lambda context the memory the stack deploys it with. */
  stage: StageSettings;
  /** Usage-plan throttling per key: a token bucket here, or the one `npm start`'s gateway processes share. */
  throttle: Throttle;
  /** Like API Gateway's authorizer result cache: 0 asks the authorizer on every request. */
  authorizerCacheTtlSeconds: number;
  /** Connections and how long a request may take to arrive: a flood of unfinished requests cannot hold the process. */
  bounds: LocalGatewayBounds;
}

/** API Gateway's own payload limit for REST APIs; the handlers enforce the smaller API limit. */
const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;
const PROJECT_ROOT = path.resolve(__dirname, '../..');
const AUTHORIZER_ENTRY = 'functions/authorizer.ts';

/** A deployed Lambda function as the gateway calls it: its handler and what its context reports. */
interface LocalFunction<H> {
  handler: H;
  name: string;
  arn: string;
  logGroupName: string;
  memoryLimitInMB: string;
  timeoutMs: number;
}

interface RouteWithFunction extends Route {
  function: LocalFunction<ProxyHandler>;
}

async function loadFunction<H>(entry: string, name: string, stage: StageSettings): Promise<LocalFunction<H>> {
  const module = (await import(path.join(PROJECT_ROOT, entry))) as { handler: H };
  return {
    handler: module.handler,
    name,
    arn: `arn:aws:lambda:local:000000000000:function:${name}`,
    logGroupName: `/aws/lambda/${name}`,
    memoryLimitInMB: String(stage.lambdaMemoryMb),
    timeoutMs: LOCAL_FUNCTION_TIMEOUT_SECONDS * 1000,
  };
}

/**
 * A function's time here: API Gateway's integration limit, not the stage's Lambda timeout. On AWS each
 * invocation has a core of its own; here the handlers share the machine's with the store, the chain
 * and the background work, and a call at the limits (10 000 addresses) cut off by a busy machine
 * would tell nothing about the service.
 */
const LOCAL_FUNCTION_TIMEOUT_SECONDS = 29;

interface CachedAuthorization {
  context: Record<string, string>;
  expiresAt: number;
}

/**
 * A local stand-in for the API Gateway REST API that the CDK stack deploys: the same route list,
 * the same Lambda handlers called with API Gateway-shaped events, the REQUEST authorizer with its
 * result cache, usage-plan throttling per key, and gateway errors in the API's error shape.
 */
export async function createLocalGateway(options: LocalGatewayOptions): Promise<Server> {
  const routes: RouteWithFunction[] = await Promise.all(
    options.routes.map(async (route) => ({ ...route, function: await loadFunction<ProxyHandler>(route.entry, route.operationId, options.stage) })),
  );
  const matchRoute = routeTable(routes);
  const referencePage = apiReference(openApiDocument(options.routes));
  const consolePage = consoleAssets(CONSOLE_DIST);
  const authorizer = await loadFunction<AuthorizerHandler>(AUTHORIZER_ENTRY, 'authorizer', options.stage);
  const authorizations = new Map<string, CachedAuthorization>();

  /** The authorizer's context cached for the key, unless it has expired. */
  function cachedAuthorization(key: string) {
    const cached = authorizations.get(key);
    return cached && cached.expiresAt > Date.now() ? cached.context : undefined;
  }

  /** Asks the authorizer, with an event built from the request's, and caches its answer. */
  async function authorize(key: string, request: APIGatewayProxyEvent) {
    let result: APIGatewayAuthorizerResult;
    try {
      result = await authorizer.handler(authorizerEvent(request), new LocalLambdaContext(authorizer, request.requestContext.requestId));
    } catch (error) {
      if (error instanceof Error && error.message === UNAUTHORIZED) throw new Unauthorized();
      throw error;
    }
    const allowed = result.policyDocument.Statement.some((statement) => statement.Effect === 'Allow');
    if (!allowed) throw new ApiError(403, ACCESS_DENIED_MESSAGE);
    const context = Object.fromEntries(Object.entries(result.context ?? {}).map(([name, value]) => [name, String(value)]));
    context.principalId = result.principalId;
    if (options.authorizerCacheTtlSeconds > 0) {
      if (authorizations.size > 10_000) pruneExpired(authorizations);
      authorizations.set(key, { context, expiresAt: Date.now() + options.authorizerCacheTtlSeconds * 1000 });
    }
    return context;
  }

  function authorizerEvent(request: APIGatewayProxyEvent): APIGatewayRequestAuthorizerEvent {
    const { body: _body, isBase64Encoded: _isBase64Encoded, requestContext, ...fields } = request;
    return {
      ...fields,
      type: 'REQUEST',
      methodArn: `arn:aws:execute-api:local:000000000000:local/${options.stage.name}/${request.httpMethod}${request.resource}`,
      pathParameters: request.pathParameters ?? {},
      requestContext: { ...requestContext, authorizer: undefined },
    };
  }

  async function serve(request: IncomingMessage, requestId: string, started: number, log: RequestLog): Promise<APIGatewayProxyResult> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = request.method ?? 'GET';
    const page = referencePage(method, url.pathname) ?? consolePage(method, url.pathname) ?? healthCheck(method, url.pathname);
    if (page) return page;
    const match = matchRoute(method, url.pathname);
    if (match.kind === 'not-found') throw new ApiError(404, NO_ROUTE_MESSAGE);
    if (match.kind === 'method-not-allowed') {
      throw new ApiError(405, methodNotAllowedMessage(match.allowed), { Allow: match.allowed.join(', ') });
    }
    const { headers, multiValueHeaders, hasBody } = requestHeaders(request);
    const key = apiKeyFromHeaders(headers);
    if (key === undefined) throw new Unauthorized();
    const query = queryParameters(url);
    const event: APIGatewayProxyEvent = {
      resource: match.route.path,
      path: url.pathname,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: query.single,
      multiValueQueryStringParameters: query.multi,
      pathParameters: Object.keys(match.pathParameters).length ? match.pathParameters : null,
      stageVariables: null,
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        authorizer: undefined,
        httpMethod: method,
        identity: {} as APIGatewayProxyEvent['requestContext']['identity'],
        path: `/${options.stage.name}${url.pathname}`,
        protocol: 'HTTP/1.1',
        requestId,
        requestTimeEpoch: started,
        resourceId: match.route.operationId,
        resourcePath: match.route.path,
        stage: options.stage.name,
      },
      body: null,
      isBase64Encoded: false,
    };
    // A cached answer is taken synchronously: most requests then await nothing before the handler.
    event.requestContext.authorizer = cachedAuthorization(key) ?? (await authorize(key, event));
    log.account = event.requestContext.authorizer.accountId;
    const taken = options.throttle.take(key);
    const retryAfter = typeof taken === 'number' ? taken : await taken;
    if (retryAfter > 0) throw new TooManyRequests(retryAfter);
    if (hasBody) event.body = await readBody(request);
    // Awaited rather than returned: an async function returning a promise takes two more turns of the microtask queue.
    return await match.route.function.handler(event, new LocalLambdaContext(match.route.function, requestId));
  }

  const server = createServer(timeoutOptions(options.bounds), async (request, response) => {
    const started = Date.now();
    const requestId = randomUUID();
    const log: RequestLog = { account: undefined };
    let result: APIGatewayProxyResult;
    try {
      result = await serve(request, requestId, started, log);
    } catch (error) {
      result = errorResponse(toApiError(error));
    }
    writeResult(response, result, requestId);
    if (logsRequests) {
      logRequest({ method: request.method, path: request.url?.split('?', 1)[0], status: result.statusCode, latencyMs: Date.now() - started, requestId, account: log.account });
    }
  });
  boundConnections(server, options.bounds);
  return server;
}

/** `GET /health` (lib/routes.ts), without a key, as the stack's mock integration answers it. */
function healthCheck(method: string, pathname: string): APIGatewayProxyResult | undefined {
  if (pathname !== HEALTH_CHECK.path) return undefined;
  if (method !== 'GET' && method !== 'HEAD') throw new ApiError(405, methodNotAllowedMessage(['GET']), { Allow: 'GET' });
  return { statusCode: 200, headers: { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' }, body: method === 'HEAD' ? '' : JSON.stringify(HEALTH_CHECK.body) };
}

/** What the request log line learns while the request is served. */
interface RequestLog {
  /** The caller's account, once the authorizer has named it (never the key). */
  account: string | undefined;
}

function pruneExpired(authorizations: Map<string, CachedAuthorization>) {
  const now = Date.now();
  for (const [key, entry] of authorizations) if (entry.expiresAt <= now) authorizations.delete(key);
}

/**
 * Header names as the client sent them, like API Gateway (Node lower-cases `request.headers`), and
 * whether a body follows. Read from the raw list: `request.headers` would build a second copy.
 */
function requestHeaders(request: IncomingMessage) {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  let hasBody = false;
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    const name = request.rawHeaders[index]!;
    const value = request.rawHeaders[index + 1]!;
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
    hasBody ||= BODY_HEADERS.has(name.toLowerCase());
  }
  return { headers, multiValueHeaders, hasBody };
}

/** A request without either has no body (RFC 9112, section 6.3). */
const BODY_HEADERS = new Set(['content-length', 'transfer-encoding']);

function queryParameters(url: URL) {
  if (url.search === '' || url.search === '?') return { single: null, multi: null };
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) {
    single[name] = value;
    (multi[name] ??= []).push(value);
  }
  return { single, multi };
}

async function readBody(request: IncomingMessage): Promise<string | null> {
  // The rest is drained: the connection stays open, for the client to read the 413.
  const body = await readBoundedBody(request, GATEWAY_MAX_BODY_BYTES, 'drain');
  if (body === undefined) throw new ApiError(413, `Request body is larger than the gateway's limit of ${GATEWAY_MAX_BODY_BYTES} bytes`);
  return body.length === 0 ? null : body.toString('utf8');
}

function writeResult(response: ServerResponse, result: APIGatewayProxyResult, requestId: string) {
  const headers: Record<string, string | string[]> = { 'x-request-id': requestId };
  for (const name in result.headers) headers[name] = String(result.headers[name]);
  for (const name in result.multiValueHeaders) headers[name] = result.multiValueHeaders[name]!.map(String);
  const body = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
  headers['Content-Length'] = String(Buffer.byteLength(body));
  response.writeHead(result.statusCode, headers);
  response.end(body);
}

const ignore = () => undefined;

/** The Lambda context of one local invocation. A class, so that no request allocates its functions. */
class LocalLambdaContext implements Context {
  callbackWaitsForEmptyEventLoop = true;
  readonly functionVersion = '$LATEST';
  readonly logStreamName = 'local';
  readonly functionName: string;
  readonly invokedFunctionArn: string;
  readonly logGroupName: string;
  readonly memoryLimitInMB: string;
  private readonly deadline: number;
  done = ignore;
  fail = ignore;
  succeed = ignore;

  constructor(
    lambda: LocalFunction<unknown>,
    readonly awsRequestId: string,
  ) {
    this.functionName = lambda.name;
    this.invokedFunctionArn = lambda.arn;
    this.logGroupName = lambda.logGroupName;
    this.memoryLimitInMB = lambda.memoryLimitInMB;
    this.deadline = Date.now() + lambda.timeoutMs;
  }

  getRemainingTimeInMillis(): number {
    return Math.max(0, this.deadline - Date.now());
  }
}
