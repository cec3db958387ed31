import * as z from './schemas/zod';
import { GSI1, GSI2, type GSI3 } from './store/table';
import { addressesBody, addressList, listAddressesQuery } from './schemas/addresses';
import { backfill, backfillList, backfillPath, createBackfillBody, listBackfillsQuery } from './schemas/backfills';
import { apiKeyList, apiKeyPath, createApiKeyBody, createdApiKey, apiKey, listApiKeysQuery } from './schemas/api-keys';
import { chainList } from './schemas/chains';
import { deliveryDetail, deliveryList, deliveryPath, listDeliveriesQuery, queuedMessage, recoverBody, recoverResult } from './schemas/deliveries';
import { accountStats, MAX_FAILING_WEBHOOKS, MAX_INACTIVE_WEBHOOKS, statsQuery, webhookStats } from './schemas/stats';
import { rotateSharedSecretBody, rotateSharedSecretQuery, sharedSecret } from './schemas/shared-secret';
import {
  createWebhookBody,
  deleteWebhookQuery,
  listWebhooksQuery,
  updateWebhookBody,
  webhook,
  webhookList,
  webhookPath,
} from './schemas/webhook';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/**
 * One operation of the API. The list below is the one source for the local gateway, the CDK stack
 * (API Gateway resources, one Lambda per operation) and the handlers' input validation.
 */
export interface Route {
  operationId: string;
  /** The API document's grouping and one-line description of the operation. */
  tag: 'Shared secret' | 'Webhooks' | 'Addresses' | 'Deliveries' | 'Statistics' | 'Backfills' | 'Chains' | 'API keys';
  summary: string;
  /** The API document's account of what the operation does, where the summary cannot say it all: its effects, its refusals, what it leaves. */
  description: string;
  method: HttpMethod;
  /** API Gateway resource path; `{id}` is a path parameter, `webhooks:getSharedSecret` one literal path part. */
  path: string;
  /** Handler module, relative to the project root; it exports `handler`. */
  entry: string;
  successStatus: number;
  query: z.ZodType<unknown, Record<string, string>>;
  pathParameters: z.ZodType<unknown, Record<string, string>>;
  /** Absent for operations that take no body: any body sent is ignored. */
  body?: z.ZodType;
  response: z.ZodType;
  /** The DynamoDB actions the operation's code sends to the table: its Lambda is granted these and no others. */
  tableActions: readonly TableAction[];
  /** The indexes the operation queries: its Lambda may query these and no other. */
  queriedIndexes?: readonly IndexName[];
  /** Error statuses the operation itself answers with besides those every operation may (see `lib/openapi`). */
  errorStatuses?: readonly (404 | 409)[];
  /** Whether the operation signs or checks page tokens (and so may read the page-token key). */
  usesPageTokens?: true;
  /** Whether the operation queues messages for delivery (and so may send to the delivery queue). */
  queuesDeliveries?: true;
  /** The API Gateway API keys of the account's keys (on AWS) the operation makes (and deletes, when a key is half made) or only deletes. */
  managesGatewayKeys?: 'create' | 'delete';
}

export type IndexName = typeof GSI1.indexName | typeof GSI2.indexName | typeof GSI3.indexName;

export type TableAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:Query'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:BatchWriteItem';

/** What a change to a webhook's addresses sends: its lease, its record, its reads and batch writes. */
const ADDRESS_CHANGE_ACTIONS: TableAction[] = [
  'dynamodb:UpdateItem',
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:PutItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:DeleteItem',
  'dynamodb:Query',
];

const noParameters = z.strictObject({});

function route<const R extends Route>(definition: R): R {
  return definition;
}

export const routes = {
  generateOrRotateSharedSecret: route({
    operationId: 'generateOrRotateSharedSecret',
    tag: 'Shared secret',
    summary: 'Generate or rotate the shared secret',
    description:
      "Generates the account's shared secret, or replaces it with a new one: 32 random bytes, hex-encoded (64 characters), which receivers hex-decode to get the HMAC key. After a rotation the replaced secret keeps signing beside the new one for a grace period (24 hours by default), so that receivers can switch over; with `endGracePeriod=true` (a leaked secret) it is dropped at once, and only the new secret signs from then on. The calling key is read again first, whatever the authorizer's cache: a key revoked a moment ago (or made by one) is a 401. A request body is not needed: an empty body or any JSON object is ignored.",
    method: 'POST',
    path: '/v1/webhooks:generateOrRotateSharedSecret',
    entry: 'functions/generate-or-rotate-shared-secret.ts',
    successStatus: 201,
    query: rotateSharedSecretQuery,
    pathParameters: noParameters,
    body: rotateSharedSecretBody,
    response: sharedSecret,
    // UpdateItem: the secret; the calling key read as it is now (lib/keys/account-api-keys.ts callerAsItIsNow):
    // GetItem of the account's count of keys, the key's id and item, BatchGetItem of the keys it descends
    // from; for an account made before those were kept, its keys' ids written once (Query of gsi1, PutItem,
    // UpdateItem).
    tableActions: ['dynamodb:UpdateItem', 'dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem'],
    queriedIndexes: [GSI1.indexName],
  }),
  getSharedSecret: route({
    operationId: 'getSharedSecret',
    tag: 'Shared secret',
    summary: 'Get the shared secret',
    description:
      "The account's current shared secret (a replaced one still signing during its grace period is not shown). A 404 until one is generated, by a call to generateOrRotateSharedSecret or by the account's first notification.",
    method: 'GET',
    path: '/v1/webhooks:getSharedSecret',
    entry: 'functions/get-shared-secret.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: noParameters,
    response: sharedSecret,
    tableActions: ['dynamodb:GetItem'],
    // Before the first generate.
    errorStatuses: [404],
  }),
  listWebhooks: route({
    operationId: 'listWebhooks',
    tag: 'Webhooks',
    summary: 'List webhooks',
    description:
      "The account's webhooks, active and inactive or of one `status`, newest first, `pageSize` at a time: every page is full but the last, which has no `nextPageToken`. Paging shows every webhook that exists throughout exactly once. A page token is signed over the account and the status filter: another account's or filter's token is a 400. On AWS a change of status may take a moment to show in a list filtered by status.",
    method: 'GET',
    path: '/v1/webhooks',
    entry: 'functions/list-webhooks.ts',
    successStatus: 200,
    query: listWebhooksQuery,
    pathParameters: noParameters,
    response: webhookList,
    tableActions: ['dynamodb:Query'],
    queriedIndexes: [GSI1.indexName],
    usesPageTokens: true,
  }),
  createWebhook: route({
    operationId: 'createWebhook',
    tag: 'Webhooks',
    summary: 'Create a webhook',
    description:
      "Creates a webhook, `active`, that is notified of every transaction touching one of `metadata.addresses` on `chainId`, which must be a chain this service follows (`GET /v1/chains` lists them). Addresses are stored lower-cased and de-duplicated; one in mixed case must hold its EIP-55 checksum. The response shows the first 100 addresses in address order (`GET /v1/webhooks/{id}/addresses` lists them all). The account's limits on webhooks and addresses apply: a 400 names the limit.",
    method: 'POST',
    path: '/v1/webhooks',
    entry: 'functions/create-webhook.ts',
    successStatus: 201,
    query: noParameters,
    pathParameters: noParameters,
    body: createWebhookBody,
    response: webhook,
    // Beside its writes, the account's usage item: counted (UpdateItem), read and created (GetItem, Query, PutItem), leftovers checked (BatchGetItem);
    // the address change recorded when DynamoDB leaves writes unprocessed, deleted once they are written (DeleteItem).
    tableActions: ['dynamodb:BatchWriteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:DeleteItem'],
  }),
  getWebhook: route({
    operationId: 'getWebhook',
    tag: 'Webhooks',
    summary: 'Get a webhook',
    description:
      "The webhook, active or inactive, with its first 100 addresses in address order. A webhook of another account, or one deleted for good, is a 404.",
    method: 'GET',
    path: '/v1/webhooks/{id}',
    entry: 'functions/get-webhook.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: webhookPath,
    response: webhook,
    tableActions: ['dynamodb:GetItem'],
  }),
  updateWebhook: route({
    operationId: 'updateWebhook',
    tag: 'Webhooks',
    summary: 'Update a webhook',
    description:
      "Sets the fields given, at least one of `name`, `description`, `url`, `status`, `includeInternalTxs`, `includeLogs` and `metadata.eventSignatures`, and keeps the rest. `chainId` and `eventType` cannot change, and addresses change through `/v1/webhooks/{id}/addresses` (`metadata.addresses` here is a 400). Setting `status` to `active` also sends the messages that waited while the webhook was inactive. A 409 when other requests changed the webhook's status or `includeInternalTxs` all the while this one tried to: send it again.",
    method: 'PATCH',
    path: '/v1/webhooks/{id}',
    entry: 'functions/update-webhook.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: webhookPath,
    body: updateWebhookBody,
    response: webhook,
    // GetItem: the webhook read before a change of its status or includeInternalTxs (its gsi2 partition follows both); PutItem: the resume job of an activation.
    tableActions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'],
    errorStatuses: [409],
  }),
  deleteWebhook: route({
    operationId: 'deleteWebhook',
    tag: 'Webhooks',
    summary: 'Deactivate a webhook, or remove it with permanent=true',
    description:
      'Without `permanent` (the hosted API\'s deactivateWebhook), nothing is deleted: the webhook stays, `inactive`, and is answered as it now is (again on an inactive webhook: still a 200). An inactive webhook is not notified of activity on its chain, and its pending messages wait; `PATCH {"status":"active"}` reactivates it. With `permanent=true` the webhook is removed for good and answered as it was: from then on it and its delivery log are a 404, and its addresses and backfills are purged in the background.',
    method: 'DELETE',
    path: '/v1/webhooks/{id}',
    entry: 'functions/delete-webhook.ts',
    successStatus: 200,
    query: deleteWebhookQuery,
    pathParameters: webhookPath,
    response: webhook,
    tableActions: ['dynamodb:UpdateItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'],
  }),
  addAddressesToWebhook: route({
    operationId: 'addAddressesToWebhook',
    tag: 'Addresses',
    summary: 'Add addresses to a webhook',
    description:
      "Adds addresses to the webhook's set; addresses already in it are fine and change nothing. Changes to one webhook's addresses are applied one at a time: a call waits up to 8 seconds for the change under way, then answers 503 with Retry-After. The limits on addresses per call, per webhook and per account apply: past one, a 400 and nothing added. Answers the webhook, its first 100 addresses in address order; `totalAddresses` of the addresses listing is exact once the call has answered.",
    method: 'PATCH',
    path: '/v1/webhooks/{id}/addresses',
    entry: 'functions/add-addresses-to-webhook.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: webhookPath,
    body: addressesBody,
    response: webhook,
    tableActions: ADDRESS_CHANGE_ACTIONS,
  }),
  removeAddressesFromWebhook: route({
    operationId: 'removeAddressesFromWebhook',
    tag: 'Addresses',
    summary: 'Remove addresses from a webhook',
    description:
      "Removes addresses from the webhook's set; absent ones are fine and change nothing. Removing every address is allowed: the webhook then watches nothing until it is given addresses again. Applied one change at a time per webhook, as adding is (a 503 with Retry-After after 8 seconds of waiting).",
    method: 'DELETE',
    path: '/v1/webhooks/{id}/addresses',
    entry: 'functions/remove-addresses-from-webhook.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: webhookPath,
    body: addressesBody,
    response: webhook,
    tableActions: ADDRESS_CHANGE_ACTIONS,
  }),
  getAddressesFromWebhook: route({
    operationId: 'getAddressesFromWebhook',
    tag: 'Addresses',
    summary: "List a webhook's addresses",
    description:
      "Every address of the webhook, in address order (lower-case hexadecimal), `pageSize` at a time, with `totalAddresses`. Full pages; the last has no `nextPageToken`. A page token is signed over the account and the webhook: another webhook's is a 400.",
    method: 'GET',
    path: '/v1/webhooks/{id}/addresses',
    entry: 'functions/get-addresses-from-webhook.ts',
    successStatus: 200,
    query: listAddressesQuery,
    pathParameters: webhookPath,
    response: addressList,
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query'],
    usesPageTokens: true,
  }),
  listDeliveries: route({
    operationId: 'listDeliveries',
    tag: 'Deliveries',
    summary: "List a webhook's delivery log",
    description:
      "The webhook's delivery log, newest first: one entry per message with its status (`pending`, `succeeded` or `failed`), attempts and last outcome, and how its URL's endpoint is doing. A page may hold fewer than `pageSize` entries and still carry a `nextPageToken`: the search for the messages of a status is bounded per call, so follow the token until there is none. Messages are kept for the retention period (30 days by default).",
    method: 'GET',
    path: '/v1/webhooks/{id}/deliveries',
    entry: 'functions/list-deliveries.ts',
    successStatus: 200,
    query: listDeliveriesQuery,
    pathParameters: webhookPath,
    response: deliveryList,
    // BatchGetItem: pending and failed messages are found through gsi2, which holds their keys only.
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'],
    queriedIndexes: [GSI2.indexName],
    usesPageTokens: true,
  }),
  getDelivery: route({
    operationId: 'getDelivery',
    tag: 'Deliveries',
    summary: 'Get one message: body as sent and its attempts',
    description:
      "One message of the webhook: the body exactly as sent (the bytes signed) and every attempt with its outcome. A message of a webhook deleted for good is a 404.",
    method: 'GET',
    path: '/v1/webhooks/{id}/deliveries/{messageId}',
    entry: 'functions/get-delivery.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: deliveryPath,
    response: deliveryDetail,
    tableActions: ['dynamodb:GetItem'],
  }),
  retryDelivery: route({
    operationId: 'retryDelivery',
    tag: 'Deliveries',
    summary: 'Send a message again now',
    description:
      "Sends the message again now, with the same message id, whatever its status. A pending message's next attempt is brought forward (it stays on its retry schedule); a finished one gets one manual attempt, whose outcome is its new status. A 409 while an attempt of the message is under way: its outcome would overwrite the retry's; retry once that outcome shows in the log. A 400 when the webhook is inactive. At most 30 retries per webhook and 120 per account a minute (a 429 with Retry-After past either).",
    method: 'POST',
    path: '/v1/webhooks/{id}/deliveries/{messageId}/retry',
    entry: 'functions/retry-delivery.ts',
    successStatus: 202,
    query: noParameters,
    pathParameters: deliveryPath,
    response: queuedMessage,
    tableActions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    // An attempt of the message is under way.
    errorStatuses: [409],
    queuesDeliveries: true,
  }),
  recoverFailedDeliveries: route({
    operationId: 'recoverFailedDeliveries',
    tag: 'Deliveries',
    summary: 'Queue again every failed message since a time',
    description:
      "Queues again every failed message of the webhook created since `since` (milliseconds), each for one manual attempt, and answers how many were queued: at most 1 000 a call, a second call takes up the rest. Messages past their retention period are left out. A 400 when the webhook is inactive; calls per webhook and per account per minute are limited (a 429 with Retry-After).",
    method: 'POST',
    path: '/v1/webhooks/{id}/recover',
    entry: 'functions/recover-failed-deliveries.ts',
    successStatus: 202,
    query: noParameters,
    pathParameters: webhookPath,
    body: recoverBody,
    response: recoverResult,
    tableActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem'],
    queriedIndexes: [GSI2.indexName],
    queuesDeliveries: true,
  }),
  sendTestNotification: route({
    operationId: 'sendTestNotification',
    tag: 'Deliveries',
    summary: 'Send a test notification',
    description:
      'Records and sends a well-formed `address_activity` notification about the webhook\'s first address, signed, retried and logged like any other. It is told apart by its block: number "0", hash all zeros. A 400 when the webhook is inactive; test notifications per webhook and per account per minute are limited (a 429 with Retry-After).',
    method: 'POST',
    path: '/v1/webhooks/{id}/test',
    entry: 'functions/send-test-notification.ts',
    successStatus: 202,
    query: noParameters,
    pathParameters: webhookPath,
    response: queuedMessage,
    // UpdateItem: the webhook's and the account's counts of test notifications in the minute.
    tableActions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    queuesDeliveries: true,
  }),
  getWebhookStats: route({
    operationId: 'getWebhookStats',
    tag: 'Statistics',
    summary: "A webhook's delivery attempts per hour, with their latency",
    description:
      "The webhook's delivery attempts of the last `hours` hours (24 by default, up to as long as the log keeps messages: 720, 30 days, unless the stage keeps them longer or shorter), per hour and in total: how many succeeded, failed and left their message pending another attempt, and their durations' percentiles. Counted as the attempts are made; on AWS a dispatcher writes its counts at most every 10 seconds, so the current hour may lag by that much. With the window's last failure, how the webhook's URL is doing, and, while the webhook is inactive, when and why it was made so (`deactivation`: by a call to the API, or by the service after a 410 Gone or a message out of retries).",
    method: 'GET',
    path: '/v1/webhooks/{id}/stats',
    entry: 'functions/get-webhook-stats.ts',
    successStatus: 200,
    query: statsQuery,
    pathParameters: webhookPath,
    response: webhookStats,
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query'],
  }),
  getAccountStats: route({
    operationId: 'getAccountStats',
    tag: 'Statistics',
    summary: "The account's delivery attempts per hour, its webhooks by status, and those failing or inactive",
    description:
      "The delivery attempts of all the account's webhooks in the last `hours` hours (24 by default, up to the log's retention as for `getWebhookStats`), per hour and in total, counted as `getWebhookStats` counts them; the webhooks with a failed attempt in the window (at most " + MAX_FAILING_WEBHOOKS + ", the most recent failure first), each with that failure and how its URL is doing; the account's webhooks by status now; and its inactive webhooks (at most " + MAX_INACTIVE_WEBHOOKS + ", the most recently created first), each with when and why it was made inactive.",
    method: 'GET',
    path: '/v1/stats',
    entry: 'functions/get-account-stats.ts',
    successStatus: 200,
    query: statsQuery,
    pathParameters: noParameters,
    response: accountStats,
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'],
    queriedIndexes: [GSI1.indexName],
  }),
  createBackfill: route({
    operationId: 'createBackfill',
    tag: 'Backfills',
    summary: "Notify a webhook of past blocks' activity",
    description:
      "Starts notifying the webhook of its addresses' activity in past blocks, from `fromBlock` to `toBlock` (by default the chain's checkpoint, after which the live follower notifies), as it would have been notified live. Answers the backfill, `running`; the chain's runner does the work in the background. One backfill runs at a time per webhook, and 3 per account by default; past a limit, a 400 naming it. A 400 when the webhook is inactive or its chain is not followed yet.",
    method: 'POST',
    path: '/v1/webhooks/{id}/backfills',
    entry: 'functions/create-backfill.ts',
    successStatus: 202,
    query: noParameters,
    pathParameters: webhookPath,
    body: createBackfillBody,
    response: backfill,
    // GetItem: the webhook, the chain's checkpoint, running backfills; PutItem/UpdateItem: the backfill and the account's running slot; Query/DeleteItem: ended backfills beyond those kept.
    tableActions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query', 'dynamodb:DeleteItem'],
  }),
  listBackfills: route({
    operationId: 'listBackfills',
    tag: 'Backfills',
    summary: "List a webhook's backfills, newest first",
    description:
      "The webhook's backfills, newest first, running and ended: each with its range, the next block to take and how many notifications it has recorded. The oldest ended ones are deleted when another starts beyond those kept per webhook.",
    method: 'GET',
    path: '/v1/webhooks/{id}/backfills',
    entry: 'functions/list-backfills.ts',
    successStatus: 200,
    query: listBackfillsQuery,
    pathParameters: webhookPath,
    response: backfillList,
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query'],
    usesPageTokens: true,
  }),
  getBackfill: route({
    operationId: 'getBackfill',
    tag: 'Backfills',
    summary: 'Get a backfill: its status and progress',
    description:
      "The backfill: `running`, `completed`, `cancelled` or `failed` (with its `reason`), its range, the next block to take and how many notifications it has recorded.",
    method: 'GET',
    path: '/v1/webhooks/{id}/backfills/{backfillId}',
    entry: 'functions/get-backfill.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: backfillPath,
    response: backfill,
    tableActions: ['dynamodb:GetItem'],
  }),
  cancelBackfill: route({
    operationId: 'cancelBackfill',
    tag: 'Backfills',
    summary: 'Cancel a running backfill (what it recorded stays recorded)',
    description:
      "Stops a running backfill: it ends `cancelled`, and the notifications it recorded stay recorded and are still sent. Nothing is deleted: it stays listed. A backfill that had already ended is answered as it is, unchanged.",
    method: 'DELETE',
    path: '/v1/webhooks/{id}/backfills/{backfillId}',
    entry: 'functions/cancel-backfill.ts',
    successStatus: 202,
    query: noParameters,
    pathParameters: backfillPath,
    response: backfill,
    tableActions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  }),
  listChains: route({
    operationId: 'listChains',
    tag: 'Chains',
    summary: 'List the followed chains, with how far each is followed',
    description:
      "The chains this service follows (a webhook on another is refused), each in the hosted Data API's shape, with how far it is followed: the checkpoint block (notified up to there), the head seen and the lag between them, and its quarantined blocks. `status` is `UNAVAILABLE` when the chain's head has not been seen for two minutes.",
    method: 'GET',
    path: '/v1/chains',
    entry: 'functions/list-chains.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: noParameters,
    response: chainList,
    // GetItem: each chain's checkpoint, head and follower's status; Query: its quarantined blocks.
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query'],
  }),
  listApiKeys: route({
    operationId: 'listApiKeys',
    tag: 'API keys',
    summary: "List the account's API keys",
    description:
      "The account's API keys, newest first, revoked ones included (kept for the audit trail): each by its id, with when it was created, last used (to within an hour) and revoked, and whether it is the key making this call. A key itself is never shown again after its creation: only its SHA-256 is kept.",
    method: 'GET',
    path: '/v1/apiKeys',
    entry: 'functions/list-api-keys.ts',
    successStatus: 200,
    query: listApiKeysQuery,
    pathParameters: noParameters,
    response: apiKeyList,
    tableActions: [],
    queriedIndexes: [GSI1.indexName],
    usesPageTokens: true,
  }),
  createApiKey: route({
    operationId: 'createApiKey',
    tag: 'API keys',
    summary: 'Create an API key for the account',
    description:
      "Makes a new key for the caller's account, under the calling key's usage plan, and answers it, shown this once: only its SHA-256 is kept. The new key records the calling key as its maker (`createdBy`): revoking the calling key revokes it too. Any key of the account may make keys, until it is revoked (at once, whatever the authorizer's cache). An account holds at most 20 keys that are not revoked (a 400 naming the limit past that) and may create at most 10 a minute (a 429 with Retry-After). A calling key whose usage plan the stage no longer offers is a 409. The body is optional: `name` labels the key in listings; other fields are ignored.",
    method: 'POST',
    path: '/v1/apiKeys',
    entry: 'functions/create-api-key.ts',
    successStatus: 201,
    query: noParameters,
    pathParameters: noParameters,
    body: createApiKeyBody,
    response: createdApiKey,
    // GetItem: the account's count of keys, the calling key, its id's item; BatchGetItem: the keys it
    // descends from; UpdateItem: the count, the minute's creations; PutItem: the key, its id's item, its
    // maker's record of it; Query: the keys made by a key of a revocation cut off earlier, finished first
    // (lib/keys/key-revocation.ts), or of the new key when its maker was revoked meanwhile; of gsi1: the
    // account's keys, to start a count or write their ids' items once.
    tableActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:Query'],
    queriedIndexes: [GSI1.indexName],
    errorStatuses: [409],
    managesGatewayKeys: 'create',
  }),
  revokeApiKey: route({
    operationId: 'revokeApiKey',
    tag: 'API keys',
    summary: 'Revoke one of the account\'s API keys',
    description:
      "Revokes the account's key with that id, with every key it made (directly or through keys they made), and answers it as it now is. A key may revoke itself and the keys made with it; any other key is a 403 (the operator's keys CLI revokes any key). The keys stop authorizing calls within the authorizer cache's 60 seconds, and stop managing keys and rotating the shared secret at once. Revoking a revoked key is a 200 that keeps its first revocation time and finishes what an earlier revocation left. A key of another account is a 404; revoking the account's last keys that are not revoked is a 409 (create another first: without a key, only the operator's keys CLI can make one).",
    method: 'DELETE',
    path: '/v1/apiKeys/{keyId}',
    entry: 'functions/revoke-api-key.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: apiKeyPath,
    response: apiKey,
    // GetItem: the account's count of keys, the calling and the revoked key, the revoked key's id item;
    // BatchGetItem: the keys the calling key descends from; UpdateItem: the count and the revocation's
    // record, each key's revocation; Query: the keys each revoked key made (lib/keys/key-revocation.ts);
    // of gsi1: the account's keys, to start a count or write their ids' items once (PutItem).
    tableActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:Query'],
    queriedIndexes: [GSI1.indexName],
    errorStatuses: [404, 409],
    managesGatewayKeys: 'delete',
  }),
};

export const routeList: Route[] = Object.values(routes);

/**
 * `GET /health`, answered without a key by the local gateway and by a mock integration on AWS. It
 * is outside the API's contract and its route list: it reads nothing, so it has no Lambda and no
 * table rights, and it says nothing but that the API answers.
 */
export const HEALTH_CHECK = { path: '/health', body: { status: 'ok' } } as const;
