import { STATUS_CODES } from 'node:http';
import { registry, toJSONSchema, type ZodType } from 'zod';
import type { JSONSchema } from 'zod/v4/core';
import { routeList, type Route } from '../routes';
import { addressList } from '../schemas/addresses';
import { chainInfo, chainList } from '../schemas/chains';
import { deliveryDetail, deliveryList, queuedMessage, recoverResult } from '../schemas/deliveries';
import { backfill, backfillList } from '../schemas/backfills';
import { apiErrorBody } from '../schemas/error';
import { apiKey, apiKeyList, createdApiKey } from '../schemas/api-keys';
import { accountStats, webhookStats } from '../schemas/stats';
import { addressActivityNotification } from '../schemas/notification';
import { sharedSecret } from '../schemas/shared-secret';
import { webhook, webhookList } from '../schemas/webhook';
import { API_KEY_HEADER } from '../keys/authorize';

export const OPENAPI_DOCUMENT_PATH = '/openapi.json';

/**
 * The response schemas the document names, by the name it gives them, as the handlers produce them
 * (zod's output side). Every route's response must be one of these (the document refuses to build
 * otherwise). Request bodies are written into their operations as callers send them (the input
 * side, before transforms): client generators such as openapi-typescript read a default in a named
 * schema as "always present", which a request field with a default is not.
 */
const RESPONSE_SCHEMAS = {
  Error: apiErrorBody,
  SharedSecret: sharedSecret,
  Webhook: webhook,
  WebhookList: webhookList,
  AddressList: addressList,
  DeliveryList: deliveryList,
  DeliveryDetail: deliveryDetail,
  QueuedMessage: queuedMessage,
  RecoverResult: recoverResult,
  Backfill: backfill,
  BackfillList: backfillList,
  WebhookStats: webhookStats,
  AccountStats: accountStats,
  ApiKey: apiKey,
  ApiKeyList: apiKeyList,
  CreatedApiKey: createdApiKey,
  // The hosted Data API's names for them.
  ListChainsResponse: chainList,
  ChainInfo: chainInfo,
  AddressActivityNotification: addressActivityNotification,
};

/** Responses every operation may give: bad input, the gateway's key checks and throttling, failures. */
const COMMON_ERROR_STATUSES = [400, 401, 403, 429, 500, 502, 503] as const;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The input is not allowed, or would take the account past a limit (docs/limits.md): the message names the parameter or limit and what is allowed',
  401: `Missing or invalid API key in the ${API_KEY_HEADER} header`,
  403: 'The API key is not allowed to call this operation',
  404: "Not found in the caller's account",
  409: "The resource's state does not allow it now: an attempt of the message is under way (retry once its outcome shows in the log), the key is the account's last one not revoked, or other requests kept changing the webhook while this one changed it",
  413: 'The request body is larger than the limit',
  415: 'The request body is not sent as application/json',
  429: "Too many requests for the key's throttle, or in a minute too many test notifications or recover calls for the webhook, or key creations for the account: retry after the time in the Retry-After header",
  500: 'An unexpected error; it has been logged under the x-request-id',
  502: 'The operation failed to answer (API Gateway); retry later',
  503: 'Temporarily unavailable: retry after the time in the Retry-After header',
};
const RETRY_AFTER_STATUSES = new Set([429, 503]);

type Schema = JSONSchema.BaseSchema;

/** The OpenAPI 3.1 document of the API: one operation per route, and the notification receivers get. */
export function openApiDocument(routes: Route[] = routeList) {
  const schemas = namedSchemas(RESPONSE_SCHEMAS);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route);
  const errorStatuses = [...new Set([...COMMON_ERROR_STATUSES, ...routes.flatMap(errorStatusesOf)])].sort((a, b) => a - b);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Webhooks API',
      version: '1.0.0',
      description:
        'Manage the webhooks of one account: its shared secret, webhooks that watch addresses on EVM chains, and their ' +
        'delivery logs. Notifications are signed with the shared secret: see the `address_activity` webhook.',
    },
    security: [{ apiKey: [] }],
    tags: [...new Set(routes.map((route) => route.tag))].map((name) => ({ name })),
    paths,
    webhooks: { address_activity: notificationEntry() },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: API_KEY_HEADER, description: 'An API key of the account (`npm run keys` locally)' },
      },
      schemas,
      headers: {
        RequestId: { description: "The request's id: quote it when asking about a request", schema: { type: 'string' } },
        RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
      },
      responses: Object.fromEntries(errorStatuses.map((status) => [String(status), errorResponse(status)])),
    },
  };
}

export type OpenApiDocument = ReturnType<typeof openApiDocument>;

function operation(route: Route) {
  const responses: Record<string, unknown> = {
    [String(route.successStatus)]: {
      description: STATUS_CODES[route.successStatus],
      headers: { 'x-request-id': { $ref: '#/components/headers/RequestId' } },
      content: { 'application/json': { schema: reference(route.response) } },
    },
  };
  for (const status of errorStatusesOf(route)) responses[String(status)] = { $ref: `#/components/responses/${status}` };
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    tags: [route.tag],
    parameters: [...parameters(route.pathParameters, 'path'), ...parameters(route.query, 'query')],
    ...(route.body && {
      requestBody: {
        required: !route.body.safeParse({}).success,
        content: { 'application/json': { schema: toJsonSchema(route.body, 'input') } },
      },
    }),
    responses,
  };
}

function errorStatusesOf(route: Route): number[] {
  const statuses = new Set<number>([...COMMON_ERROR_STATUSES, ...(route.errorStatuses ?? [])]);
  if (parameterSchemas(route.pathParameters).length > 0) statuses.add(404);
  if (route.body) [413, 415].forEach((status) => statuses.add(status));
  return [...statuses].sort((a, b) => a - b);
}

function errorResponse(status: number) {
  return {
    description: ERROR_DESCRIPTIONS[status] ?? STATUS_CODES[status],
    headers: {
      'x-request-id': { $ref: '#/components/headers/RequestId' },
      ...(RETRY_AFTER_STATUSES.has(status) && { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } }),
    },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

function parameters(schema: ZodType, location: 'path' | 'query') {
  return parameterSchemas(schema).map(([name, parameterSchema, required]) => {
    const { description, ...rest } = parameterSchema;
    return { name, in: location, required: location === 'path' || required, ...(description && { description }), schema: rest };
  });
}

function parameterSchemas(schema: ZodType): [string, Schema, boolean][] {
  const object = toJsonSchema(schema, 'input');
  return Object.entries(object.properties ?? {}).map(([name, property]) => [name, property as Schema, object.required?.includes(name) ?? false]);
}

function reference(schema: ZodType) {
  const name = Object.keys(RESPONSE_SCHEMAS).find((key) => RESPONSE_SCHEMAS[key as keyof typeof RESPONSE_SCHEMAS] === schema);
  if (!name) throw new Error('A route uses a schema the API document does not name: add it to lib/openapi/document.ts');
  return { $ref: `#/components/schemas/${name}` };
}

function namedSchemas(named: Record<string, ZodType>): Record<string, Schema> {
  const names = registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) names.add(schema, { id });
  const { schemas } = toJSONSchema(names, { ...JSON_SCHEMA_OPTIONS, io: 'output', uri: (id) => `#/components/schemas/${id}` });
  return Object.fromEntries(Object.entries(schemas).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]));
}

function toJsonSchema(schema: ZodType, io: 'input' | 'output'): Schema {
  const { $schema: _dialect, ...rest } = toJSONSchema(schema, { ...JSON_SCHEMA_OPTIONS, io });
  return rest;
}

const JSON_SCHEMA_OPTIONS = {
  target: 'draft-2020-12',
  // Refinements (control characters, normalized limits) have no JSON Schema form: the handler checks them.
  unrepresentable: 'any',
  override: ({ zodSchema, jsonSchema }) => {
    const def = zodSchema._zod.def;
    // A field that must be absent (metadata.addresses in a PATCH).
    if (def.type === 'undefined') jsonSchema.not = {};
    // A query parameter is text on the wire: its schema parses digits, and its metadata says the
    // number they mean (page sizes), so the digits pattern is the wire's, not the document's.
    if (jsonSchema.type === 'integer') delete jsonSchema.pattern;
    // zod leaves defaults out of input schemas; a caller needs them, in the type it sends.
    if (def.type === 'default' && jsonSchema.default === undefined) {
      const value: unknown = def.defaultValue;
      if (jsonSchema.enum?.includes(String(value))) jsonSchema.default = String(value);
      else if (typeof value !== 'object') jsonSchema.default = value as Schema['default'];
    }
  },
} satisfies Parameters<typeof toJSONSchema>[1];

function notificationEntry() {
  const header = (name: string, description: string, required = true) => ({ name, in: 'header', required, description, schema: { type: 'string' } });
  return {
    post: {
      operationId: 'addressActivity',
      summary: 'A transaction touched a watched address',
      description:
        'Sent to the webhook URL for each matching transaction, retried until a 2xx arrives. De-duplicate on `messageId`. ' +
        'Verify `x-signature` (base64 HMAC-SHA256 of the canonical JSON body, keyed with the hex-decoded shared secret), ' +
        'or the Standard Webhooks headers with the `standardwebhooks` libraries.',
      security: [],
      parameters: [
        header('x-signature', 'Base64 HMAC-SHA256 of the body in canonical JSON (RFC 8785), keyed with the hex-decoded shared secret'),
        header('webhook-id', 'Standard Webhooks: the messageId'),
        header('webhook-timestamp', 'Standard Webhooks: Unix seconds of this attempt'),
        header('webhook-signature', 'Standard Webhooks: `v1,<base64>` signatures, one per valid key, space-separated'),
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/AddressActivityNotification' } } } },
      responses: { '2XX': { description: 'Received: any 2xx within 10 seconds counts' } },
    },
  };
}
