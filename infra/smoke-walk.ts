/**
 * The smoke walk of a stage: the hosted SDK's webhook operations through its API, and the operations
 * of ours the SDK lacks (API keys, test notifications, the delivery log, permanent deletion) by fetch.
 * Each call is one step; the walk stops at the first failure, and deletes what it made either way.
 */
import { randomBytes } from 'node:crypto';
import { AvaCloudSDK } from '@avalabs/avacloud-sdk';
import { HTTPClient } from '@avalabs/avacloud-sdk/lib/http';
import type { RequestOptions } from '@avalabs/avacloud-sdk/lib/sdks';
import { AvaCloudSDKError } from '@avalabs/avacloud-sdk/models/errors/avacloudsdkerror';
import { HTTPClientError } from '@avalabs/avacloud-sdk/models/errors/httpclienterrors';
import { ResponseValidationError } from '@avalabs/avacloud-sdk/models/errors/responsevalidationerror';
import { SDKValidationError } from '@avalabs/avacloud-sdk/models/errors/sdkvalidationerror';
import { ZodError } from 'zod';
import { API_KEY_HEADER } from '../lib/keys/authorize';
import { routes, type Route } from '../lib/routes';

/** Per request: a stage that takes longer is failing, for a smoke test. */
const REQUEST_TIMEOUT_MS = 15_000;
/** How long the test notification may take to be delivered: its first attempt is at once, the first retry ~5 s later. */
export const DELIVERY_TIMEOUT_MS = 30_000;
/** A webhook URL that never resolves (RFC 2606), for a walk without a receiver: nothing is sent to it. */
const NOWHERE = 'https://smoke-test.invalid/';

export interface SmokeTarget {
  /** The API's base URL, without a trailing slash. */
  api: string;
  key: string;
  /** The webhook's URL; a test notification is sent to it, and its delivery awaited, when given. */
  receiver?: string;
}

export interface StepOutcome {
  name: string;
  ms: number;
  /** On failure: the answer's HTTP status, when there was one, and what went wrong. */
  failure?: { status?: number; message: string };
}

/** What a step found wrong in an answer the API gave (or the error body's message and status). */
class StepFailure extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Thrown by a step that failed (and was reported), to stop the walk. */
class StepFailed extends Error {}

/** Walks the stage, reporting each step as it ends; true when every step passed. */
export async function walkStage(target: SmokeTarget, report: (outcome: StepOutcome) => void): Promise<boolean> {
  const stage = stageClient(target);
  // Never shown, whatever an answer echoes: the key, the account's shared secret, the key the walk makes.
  const secrets = [target.key];
  let passed = true;
  const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    try {
      const value = await run();
      report({ name, ms: ms() });
      return value;
    } catch (error) {
      const { status, message } = failureOf(error);
      const shown = secrets.reduce((text, secret) => text.replaceAll(secret, '[redacted]'), message);
      report({ name, ms: ms(), failure: { status, message: shown } });
      passed = false;
      throw new StepFailed();
    }
  };

  let webhookId: string | undefined;
  let unrevokedKeyId: string | undefined;
  try {
    // First a call that must succeed: a wrong base URL or key fails here, not as a missing secret (a 404 too).
    const chainId = await step('list chains', stage.firstChain);
    const secret = (await step('get shared secret', stage.getSharedSecret)) ?? (await step('generate shared secret', stage.generateSharedSecret));
    secrets.push(secret);
    const [first, second] = [randomAddress(), randomAddress()] as const;
    const created = await step('create webhook', () => stage.createWebhook(chainId, target.receiver ?? NOWHERE, first));
    const { id } = created;
    webhookId = id;
    await step('list webhooks', () => stage.expectListed(id));
    await step('get webhook', () => stage.expectWebhook(id, created.url));
    await step('add address', () => stage.addAddress(id, second));
    await step('list addresses', () => stage.expectAddresses(id, [first, second]));
    await step('remove address', () => stage.removeAddress(id, second, [first]));
    if (target.receiver !== undefined) {
      const messageId = await step('send test notification', () => stage.sendTestNotification(id));
      await step('delivery of the test notification', () => stage.awaitDelivery(id, messageId));
    }
    const made = await step('create API key', stage.createApiKey);
    unrevokedKeyId = made.keyId;
    secrets.push(made.key);
    await step('revoke API key', () => stage.revokeApiKey(made.keyId));
    unrevokedKeyId = undefined;
    await step('deactivate webhook', () => stage.deactivateWebhook(id));
  } catch (error) {
    rethrowUnlessReported(error);
  } finally {
    if (unrevokedKeyId !== undefined) await step('revoke API key', () => stage.revokeApiKey(unrevokedKeyId!)).catch(rethrowUnlessReported);
    if (webhookId !== undefined) await step('delete webhook', () => stage.deleteWebhook(webhookId!)).catch(rethrowUnlessReported);
  }
  return passed;
}

/** A failed step was reported and ends the walk; anything else is a fault of the walk itself. */
function rethrowUnlessReported(error: unknown): void {
  if (!(error instanceof StepFailed)) throw error;
}

/** The calls of the walk, each checking what it was answered. */
function stageClient({ api, key }: SmokeTarget) {
  // Retries off: a smoke test reports a failure instead of hiding it, and a retried create would make a second webhook.
  const options: RequestOptions = { serverURL: api, retries: { strategy: 'none' }, timeoutMs: REQUEST_TIMEOUT_MS };
  const httpClient = new HTTPClient({
    fetcher: (input, init) => {
      const request = new Request(input, init);
      // The key goes to the stage only: without options.serverURL, the SDK's operations go to AvaCloud's own server.
      if (!request.url.startsWith(`${api}/`)) throw new Error(`the SDK asked for ${new URL(request.url).origin}, not the stage`);
      request.headers.set(API_KEY_HEADER, key);
      return fetch(request);
    },
  });
  const sdk = new AvaCloudSDK({ serverURL: api, httpClient });

  /** One of our operations the SDK does not have, its answer parsed with the route's response schema. */
  const call = async <R extends Route>(route: R, pathParameters: Record<string, string>, { query = '', body }: { query?: string; body?: unknown } = {}) => {
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(pathParameters[name]!));
    const response = await fetch(`${api}${path}${query}`, {
      method: route.method,
      headers: { [API_KEY_HEADER]: key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    if (response.status !== route.successStatus) throw new StepFailure(errorMessageOf(text), response.status);
    return route.response.parse(JSON.parse(text)) as ReturnType<R['response']['parse']>;
  };

  return {
    /** The account's secret, or undefined when it has none yet (a 404): the walk then generates one. */
    getSharedSecret: async (): Promise<string | undefined> => {
      try {
        return (await sdk.webhooks.getSharedSecret(options)).secret;
      } catch (error) {
        if (error instanceof AvaCloudSDKError && error.statusCode === 404) return undefined;
        throw error;
      }
    },
    generateSharedSecret: async () => (await sdk.webhooks.generateOrRotateSharedSecret(options)).secret,
    firstChain: async () => {
      const { chains } = await sdk.data.evm.chains.list({}, options);
      const chain = chains[0];
      if (!chain) throw new StepFailure('the stage follows no chain: a webhook cannot be created');
      return chain.chainId;
    },
    createWebhook: (chainId: string, url: string, address: string) =>
      sdk.webhooks.create({ eventType: 'address_activity', chainId, url, name: 'smoke test', metadata: { addresses: [address] } }, options),
    expectListed: async (id: string) => {
      const { result } = await sdk.webhooks.list({ pageSize: 10 }, options);
      if (!result.webhooks.some((webhook) => webhook.id === id)) throw new StepFailure('the new webhook is not on the first page of the list (newest first)');
    },
    expectWebhook: async (id: string, url: string) => {
      const webhook = await sdk.webhooks.get({ id }, options);
      if (webhook.id !== id || webhook.url !== url) throw new StepFailure(`answered webhook ${webhook.id} at ${webhook.url}, not ${id} at ${url}`);
    },
    addAddress: async (id: string, address: string) => {
      const webhook = await sdk.webhooks.addresses.add({ id, addressesChangeRequest: { addresses: [address] } }, options);
      if (!webhook.metadata.addresses.includes(address)) throw new StepFailure(`the address added is not in the webhook's metadata.addresses`);
    },
    expectAddresses: async (id: string, addresses: string[]) => {
      const { result } = await sdk.webhooks.addresses.list({ id, pageSize: 10 }, options);
      if (!sameAddresses(result.addresses, addresses)) throw new StepFailure(`listed ${result.addresses.length} addresses, not the webhook's ${addresses.length}`);
    },
    removeAddress: async (id: string, address: string, left: string[]) => {
      const webhook = await sdk.webhooks.addresses.remove({ id, addressesChangeRequest: { addresses: [address] } }, options);
      if (!sameAddresses(webhook.metadata.addresses, left)) throw new StepFailure(`the webhook has ${webhook.metadata.addresses.length} addresses after the removal, not ${left.length}`);
    },
    sendTestNotification: async (id: string) => (await call(routes.sendTestNotification, { id })).messageId,
    /** Until the log shows the message delivered: a receiver that keeps failing fails the step with the log's reason. */
    awaitDelivery: async (id: string, messageId: string) => {
      const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
      for (;;) {
        const delivery = await call(routes.getDelivery, { id, messageId });
        if (delivery.status === 'succeeded') return;
        const last = delivery.lastError ?? (delivery.lastResponseStatusCode ? `answered ${delivery.lastResponseStatusCode}` : 'no attempt made yet');
        if (delivery.status === 'failed') throw new StepFailure(`the delivery log shows it failed after ${delivery.attempts} attempts (last: ${last})`);
        if (Date.now() > deadline) throw new StepFailure(`not delivered within ${DELIVERY_TIMEOUT_MS / 1000} s: ${delivery.attempts} attempts (last: ${last})`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    },
    createApiKey: () => call(routes.createApiKey, {}, { body: { name: 'smoke test' } }),
    revokeApiKey: async (keyId: string) => {
      const revoked = await call(routes.revokeApiKey, { keyId });
      if (revoked.revokedAt === undefined) throw new StepFailure('the key is answered without revokedAt');
    },
    deactivateWebhook: async (id: string) => {
      const webhook = await sdk.webhooks.deactivate({ id }, options);
      if (webhook.status !== 'inactive') throw new StepFailure(`the webhook is ${webhook.status} after the deactivation`);
    },
    deleteWebhook: (id: string) => call(routes.deleteWebhook, { id }, { query: '?permanent=true' }),
  };
}

/** A random address, lower-case: one no real transaction touches, so the webhook is notified of nothing else. */
const randomAddress = () => `0x${randomBytes(20).toString('hex')}`;

const sameAddresses = (listed: string[], expected: string[]) => listed.length === expected.length && expected.every((address) => listed.includes(address));

/** A failed step's HTTP status (when an answer came) and reason, from whichever layer threw. */
function failureOf(error: unknown): { status?: number; message: string } {
  const firstLine = (text: string) => text.split('\n')[0]!;
  if (error instanceof StepFailure) return { status: error.status, message: error.message };
  if (error instanceof ResponseValidationError) return { status: error.statusCode, message: `the answer does not fit the hosted SDK's model: ${firstLine(error.pretty())}` };
  if (error instanceof AvaCloudSDKError) return { status: error.statusCode, message: errorMessageOf(error.body) };
  if (error instanceof SDKValidationError) return { message: `the hosted SDK refused the data: ${firstLine(error.pretty())}` };
  if (error instanceof ZodError) return { message: `the answer does not fit the API document: ${error.issues[0]?.path.join('.')} ${error.issues[0]?.message}` };
  if (error instanceof HTTPClientError || error instanceof TypeError) return { message: `no answer: ${networkReasonOf(error)}` };
  if ((error as Error).name === 'TimeoutError') return { message: `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` };
  return { message: firstLine((error as Error).message) };
}

/** Why a request got no answer: the innermost cause's code (ECONNREFUSED, ENOTFOUND), under the SDK's and fetch's wrappers. */
function networkReasonOf(error: Error): string {
  let reason = error.message;
  for (let cause: unknown = error.cause; cause instanceof Error; cause = cause.cause) {
    reason = (cause as NodeJS.ErrnoException).code ?? cause.message;
  }
  return reason;
}

/** The error body's `message` (our errors and API Gateway's own carry one), else the start of the body. */
function errorMessageOf(body: string): string {
  try {
    const { message } = JSON.parse(body) as { message?: unknown };
    if (typeof message === 'string') return message;
    if (Array.isArray(message)) return message.join('; ');
  } catch {
    // not JSON: shown as it came, cut short
  }
  return body.trim() === '' ? '(empty body)' : `(no message) ${body.slice(0, 200)}`;
}
