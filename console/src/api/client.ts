import createClient, { type Middleware } from 'openapi-fetch';
import { session } from '../session';
import type { components, operations, paths } from './schema.generated';

export type Schemas = components['schemas'];
export type Webhook = Schemas['Webhook'];
export type Delivery = Schemas['DeliveryList']['deliveries'][number];
export type DeliveryDetail = Schemas['DeliveryDetail'];
export type DeliveryAttempt = DeliveryDetail['attemptHistory'][number];
/** How a webhook's URL is doing, as its recent attempts showed it. */
export type EndpointState = Schemas['DeliveryList']['endpoint'];
export type Backfill = Schemas['Backfill'];
export type WebhookStats = Schemas['WebhookStats'];
export type AccountStats = Schemas['AccountStats'];
export type StatsHour = WebhookStats['hours'][number];
/** When and why a webhook was last made inactive. */
export type Deactivation = NonNullable<WebhookStats['deactivation']>;
export type ApiKey = Schemas['ApiKey'];
export type Chain = Schemas['ChainInfo'];
export type NewWebhook = operations['createWebhook']['requestBody']['content']['application/json'];
export type WebhookChanges = operations['updateWebhook']['requestBody']['content']['application/json'];

/**
 * The addresses one call may add or remove, as the console assumes it: the stages' MAX_ADDRESSES_PER_CALL
 * default, which the API does not publish. A stage configured lower refuses a larger call with a 400
 * naming its limit, and address-changes.ts goes on in calls of that size.
 */
export const ADDRESSES_PER_CALL = 10_000;

export const API_KEY_HEADER = 'x-service-api-key';

/** An answer other than 2xx, as the API words it: `{ message, statusCode, error }`. */
export class ApiFailure extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly error: string,
    /** Seconds to wait before retrying, from a 429's or 503's Retry-After header. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ApiFailure';
  }
}

const withKey: Middleware = {
  onRequest({ request }) {
    const key = session.key();
    if (key) request.headers.set(API_KEY_HEADER, key);
    return request;
  },
};

/** The API's client, typed from openapi.json: the console and the API share an origin. */
export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use(withKey);

interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * The data of a 2xx answer; any other is thrown as an ApiFailure with the API's message. A 401 (a
 * wrong or revoked key) also signs the user out, with that message shown at sign-in.
 */
export async function answer<T>(request: Promise<FetchResult<T>>): Promise<T> {
  let result: FetchResult<T>;
  try {
    result = await request;
  } catch {
    throw new ApiFailure(0, 'The service did not answer: check that it is running, then try again.', 'Network Error');
  }
  const { data, error, response } = result;
  if (response.ok) return data as T;
  const body = (typeof error === 'object' && error !== null ? error : {}) as { message?: unknown; error?: unknown };
  const message = typeof body.message === 'string' ? body.message : `${response.status} ${response.statusText}`;
  const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
  const failure = new ApiFailure(response.status, message, typeof body.error === 'string' ? body.error : response.statusText, Number.isFinite(retryAfter) ? retryAfter : undefined);
  if (response.status === 401) session.signOut(message);
  throw failure;
}

/**
 * A 400's message split by the fields it names ("Invalid body field url: ...; Invalid body field
 * name: ..."), so that a form can show each beside its field; what names no field is `other`.
 */
export function fieldMessages(failure: unknown): { fields: Record<string, string>; other: string[] } {
  const fields: Record<string, string> = {};
  const other: string[] = [];
  if (!(failure instanceof ApiFailure)) return { fields, other: [String(failure instanceof Error ? failure.message : failure)] };
  // A message may itself hold '; ' ("...; check it for a typo"): split only where the next one starts.
  for (const part of failure.message.split(/; (?=Invalid |Unknown )/)) {
    const named = /^Invalid (?:body field|query parameter|path parameter) ([\w.[\]]+): (.*)$/s.exec(part);
    if (named) {
      const field = named[1]!.replace(/\[\d+\]$/, '');
      fields[field] = fields[field] ? `${fields[field]}; ${named[2]}` : named[2]!;
    } else other.push(part);
  }
  return { fields, other };
}
