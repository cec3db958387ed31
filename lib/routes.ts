import * as z from './schemas/zod';
import { addressesBody, addressList, listAddressesQuery } from './schemas/addresses';
import { backfill, backfillList, backfillPath, createBackfillBody, listBackfillsQuery } from './schemas/backfills';
import { chainList } from './schemas/chains';
import { deliveryDetail, deliveryList, deliveryPath, listDeliveriesQuery, queuedMessage, recoverBody, recoverResult } from './schemas/deliveries';
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
  tag: 'Shared secret' | 'Webhooks' | 'Addresses' | 'Deliveries' | 'Backfills' | 'Chains';
  summary: string;
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
  /** The DynamoDB actions the operation's code sends: its Lambda is granted these and no others. */
  tableActions: readonly TableAction[];
  /** Error statuses the operation itself answers with besides those every operation may (see `lib/openapi`). */
  errorStatuses?: readonly (404 | 409)[];
  /** Whether the operation signs or checks page tokens (and so may read the page-token key). */
  usesPageTokens?: true;
  /** Whether the operation queues messages for delivery (and so may send to the delivery queue). */
  queuesDeliveries?: true;
}

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
    method: 'POST',
    path: '/v1/webhooks:generateOrRotateSharedSecret',
    entry: 'functions/generate-or-rotate-shared-secret.ts',
    successStatus: 201,
    query: rotateSharedSecretQuery,
    pathParameters: noParameters,
    body: rotateSharedSecretBody,
    response: sharedSecret,
    tableActions: ['dynamodb:UpdateItem'],
  }),
  getSharedSecret: route({
    operationId: 'getSharedSecret',
    tag: 'Shared secret',
    summary: 'Get the shared secret',
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
    method: 'GET',
    path: '/v1/webhooks',
    entry: 'functions/list-webhooks.ts',
    successStatus: 200,
    query: listWebhooksQuery,
    pathParameters: noParameters,
    response: webhookList,
    tableActions: ['dynamodb:Query'],
    usesPageTokens: true,
  }),
  createWebhook: route({
    operationId: 'createWebhook',
    tag: 'Webhooks',
    summary: 'Create a webhook',
    method: 'POST',
    path: '/v1/webhooks',
    entry: 'functions/create-webhook.ts',
    successStatus: 201,
    query: noParameters,
    pathParameters: noParameters,
    body: createWebhookBody,
    response: webhook,
    // Beside its writes, the account's usage item: counted (UpdateItem), read and created (GetItem, Query, PutItem), leftovers checked (BatchGetItem).
    tableActions: ['dynamodb:BatchWriteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'],
  }),
  getWebhook: route({
    operationId: 'getWebhook',
    tag: 'Webhooks',
    summary: 'Get a webhook',
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
    method: 'PATCH',
    path: '/v1/webhooks/{id}',
    entry: 'functions/update-webhook.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: webhookPath,
    body: updateWebhookBody,
    response: webhook,
    // PutItem: the resume job of an activation.
    tableActions: ['dynamodb:UpdateItem', 'dynamodb:PutItem'],
  }),
  deleteWebhook: route({
    operationId: 'deleteWebhook',
    tag: 'Webhooks',
    summary: 'Deactivate a webhook, or remove it with permanent=true',
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
    method: 'GET',
    path: '/v1/webhooks/{id}/deliveries',
    entry: 'functions/list-deliveries.ts',
    successStatus: 200,
    query: listDeliveriesQuery,
    pathParameters: webhookPath,
    response: deliveryList,
    // BatchGetItem: pending and failed messages are found through gsi2, which holds their keys only.
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'],
    usesPageTokens: true,
  }),
  getDelivery: route({
    operationId: 'getDelivery',
    tag: 'Deliveries',
    summary: 'Get one message: body as sent and its attempts',
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
    method: 'POST',
    path: '/v1/webhooks/{id}/recover',
    entry: 'functions/recover-failed-deliveries.ts',
    successStatus: 202,
    query: noParameters,
    pathParameters: webhookPath,
    body: recoverBody,
    response: recoverResult,
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem'],
    queuesDeliveries: true,
  }),
  sendTestNotification: route({
    operationId: 'sendTestNotification',
    tag: 'Deliveries',
    summary: 'Send a test notification',
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
  createBackfill: route({
    operationId: 'createBackfill',
    tag: 'Backfills',
    summary: "Notify a webhook of past blocks' activity",
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
    method: 'GET',
    path: '/v1/chains',
    entry: 'functions/list-chains.ts',
    successStatus: 200,
    query: noParameters,
    pathParameters: noParameters,
    response: chainList,
    // GetItem: each chain's checkpoint and head; Query: its quarantined blocks.
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query'],
  }),
};

export const routeList: Route[] = Object.values(routes);
