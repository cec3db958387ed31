import type { APIGatewayProxyEvent } from 'aws-lambda';
import type * as z from '../schemas/zod';
import { BadRequest, PayloadTooLarge, UnsupportedMediaType } from '../errors';

export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

/**
 * Query parameters as one string each. A parameter with an empty value counts as absent;
 * one given twice is refused rather than guessing which value was meant.
 */
export function queryParameters(event: APIGatewayProxyEvent): Record<string, string> {
  const parameters: Record<string, string> = {};
  const multi = event.multiValueQueryStringParameters;
  const single = event.queryStringParameters;
  for (const name in multi ?? single) {
    const values = multi ? (multi[name] ?? []) : [single![name]];
    let given: string | undefined;
    for (const value of values) {
      if (value === undefined || value === '') continue;
      if (given !== undefined) throw new BadRequest(`Invalid query parameter ${name}: must be given at most once`);
      given = value;
    }
    if (given !== undefined) parameters[name] = given;
  }
  return parameters;
}

/**
 * `application/json` or any `application/*+json`, with parameters; a charset, if given, must be
 * UTF-8, the only encoding JSON allows between systems (RFC 8259, section 8.1).
 */
function isJsonMediaType(contentType: string): boolean {
  const [mediaType = '', ...parameters] = contentType.toLowerCase().split(';');
  const [type, subtype = ''] = mediaType.trim().split('/');
  if (type !== 'application' || !(subtype === 'json' || subtype.endsWith('+json'))) return false;
  return parameters.every((parameter) => {
    const [name = '', value = ''] = parameter.split('=');
    return name.trim() !== 'charset' || value.trim().replace(/^"(.*)"$/, '$1') === 'utf-8';
  });
}

/** A header's value by name, whatever case the client sent it in (API Gateway passes names as sent). */
function headerValue(event: APIGatewayProxyEvent, name: string): string | undefined {
  for (const header in event.headers) if (header.toLowerCase() === name) return event.headers[header];
  return undefined;
}

/**
 * The body as a JSON object; no body at all reads as `{}`. A body that says it is something other
 * than JSON is refused rather than parsed anyway; one that says nothing is read as JSON.
 */
export function jsonBody(event: APIGatewayProxyEvent): Record<string, unknown> {
  if (event.body === null || event.body === undefined || event.body === '') return {};
  const contentType = headerValue(event, 'content-type');
  if (contentType !== undefined && !isJsonMediaType(contentType)) {
    throw new UnsupportedMediaType(`Request body must be JSON: send it with content-type application/json, not ${JSON.stringify(contentType)}`);
  }
  const raw = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : event.body;
  if ((typeof raw === 'string' ? Buffer.byteLength(raw) : raw.byteLength) > MAX_REQUEST_BODY_BYTES) {
    throw new PayloadTooLarge(`Request body is larger than the limit of ${MAX_REQUEST_BODY_BYTES} bytes`);
  }
  let parsed: unknown;
  try {
    // A leading byte order mark is allowed (RFC 8259 lets a parser ignore it); JSON.parse does not skip it.
    const text = typeof raw === 'string' ? raw : raw.toString('utf8');
    parsed = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    throw new BadRequest('Request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new BadRequest('Request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

type InputKind = 'query parameter' | 'path parameter' | 'body field';

/** Validates with the route's schema; a failure is a 400 naming each offending field and what it allows. */
export function validated<S extends z.ZodType>(schema: S, input: unknown, kind: InputKind): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const messages = result.error.issues.slice(0, 10).map((issue) => describeIssue(schema, issue, kind));
  throw new BadRequest(messages.join('; '));
}

function describeIssue(schema: z.ZodType, issue: z.core.$ZodIssue, kind: InputKind): string {
  const field = fieldName(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const unknown = issue.keys.map((key) => (field ? `${field}.${key}` : key)).join(', ');
    const allowed = objectKeysAt(schema, issue.path);
    return `Unknown ${kind}${issue.keys.length > 1 ? 's' : ''} ${unknown}; allowed: ${allowed.length ? allowed.join(', ') : 'none'}`;
  }
  if (!field) return `Invalid request body: ${issue.message}`;
  return `Invalid ${kind} ${field}: ${issue.message}`;
}

function fieldName(path: PropertyKey[]): string {
  return path
    .map((part, index) => (typeof part === 'number' ? `[${part}]` : `${index > 0 ? '.' : ''}${String(part)}`))
    .join('');
}

/**
 * The keys an object schema allows at a path, looking through optional/default/pipe wrappers. A key
 * whose schema accepts only its absence (`z.undefined()`, there to explain why it is refused) is not
 * among them.
 */
function objectKeysAt(schema: z.ZodType, path: PropertyKey[]): string[] {
  const shape = (unwrapped(schema, path)?._zod.def as { shape?: Record<string, z.core.$ZodType> } | undefined)?.shape;
  if (!shape) return [];
  return Object.keys(shape).filter((key) => unwrapped(shape[key]!, [])?._zod.def.type !== 'undefined');
}

/** The schema at a path, with optional/default/pipe wrappers looked through. */
function unwrapped(schema: z.core.$ZodType, path: PropertyKey[]): z.core.$ZodType | undefined {
  let current: z.core.$ZodType | undefined = schema;
  for (const part of [...path, undefined]) {
    for (let def = current?._zod.def as Record<string, any> | undefined; def; def = current?._zod.def as Record<string, any>) {
      const inner = def.innerType ?? def.in;
      if (!inner) break;
      current = inner;
    }
    if (part === undefined) break;
    current = (current?._zod.def as { shape?: Record<PropertyKey, z.core.$ZodType> } | undefined)?.shape?.[part];
  }
  return current;
}
