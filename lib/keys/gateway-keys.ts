import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetUsagePlansCommand,
  NotFoundException,
} from '@aws-sdk/client-api-gateway';
import type { UsagePlanName } from '../config/stages';
import { countNewKey, giveBackCount, storeCountedKey, type ApiKeyRecord, type NewKeyOptions } from './api-keys';
import type { Revocation } from './key-revocation';

/**
 * The API Gateway API keys of our keys, on AWS: shared by the keys CLI and the API's key operations.
 * An API Gateway key's value is the key's usage identifier, never the key: the customer's key exists
 * nowhere but with the customer (the table has its SHA-256).
 */

/** The usage plan a key is put under: its name, recorded with the key, its id, and the stage it is of. */
export interface UsagePlanPlacement {
  plan: UsagePlanName;
  usagePlanId: string;
  stage: string;
}

const usagePlanIds = new Map<string, Promise<string>>();

/**
 * A usage plan's id, by its name, looked up once per process. The stack cannot hand the id to the
 * functions that make keys: the plan depends on the API's stage, which depends on those functions.
 */
export function usagePlanIdNamed(name: string, apiGateway = new APIGatewayClient({})): Promise<string> {
  let id = usagePlanIds.get(name);
  if (!id) {
    id = findUsagePlanId(name, apiGateway);
    // A failed look-up (API Gateway unreachable) is tried again by the next call.
    id.catch(() => usagePlanIds.delete(name));
    usagePlanIds.set(name, id);
  }
  return id;
}

async function findUsagePlanId(name: string, apiGateway: APIGatewayClient): Promise<string> {
  let position: string | undefined;
  do {
    const page = await apiGateway.send(new GetUsagePlansCommand({ limit: 500, position }));
    const plan = page.items?.find((item) => item.name === name);
    if (plan?.id) return plan.id;
    position = page.position;
  } while (position);
  throw new Error(`No usage plan named '${name}'`);
}

/**
 * The tag every API Gateway key of ours carries, naming its stage: the stack lets the key functions
 * delete only API Gateway keys tagged with their own stage (infra/webhooks-stack.ts).
 */
export const STAGE_TAG = 'stage';

/**
 * Makes the API Gateway API key whose value is the key's usage identifier, tagged with `stage` (the
 * function's, or the one the keys CLI works on), and puts it under the usage plan: the
 * authorizer returns the usage identifier as usageIdentifierKey, and API Gateway throttles and meters
 * the request under the plan of the API key with that value.
 */
export async function createGatewayKey(
  { usagePlanId, stage }: Pick<UsagePlanPlacement, 'usagePlanId' | 'stage'>,
  key: { value: string; name: string },
  apiGateway = new APIGatewayClient({}),
): Promise<string> {
  const tags = { [STAGE_TAG]: stage };
  const { id } = await apiGateway.send(new CreateApiKeyCommand({ name: key.name, value: key.value, enabled: true, tags }));
  try {
    await apiGateway.send(new CreateUsagePlanKeyCommand({ usagePlanId, keyId: id, keyType: 'API_KEY' }));
  } catch (error) {
    await deleteGatewayKey(id!, apiGateway);
    throw error;
  }
  return id!;
}

/** Whether there was a key to delete: false when it was already gone. */
export async function deleteGatewayKey(apiGatewayKeyId: string, apiGateway = new APIGatewayClient({})): Promise<boolean> {
  try {
    await apiGateway.send(new DeleteApiKeyCommand({ apiKey: apiGatewayKeyId }));
    return true;
  } catch (error) {
    if (error instanceof NotFoundException) return false;
    throw error;
  }
}

/**
 * Stores a new key for the account (and the account, if new), counted on the account first
 * (`limited`: the API's calls are refused at the account's limit; the keys CLI's are not). With
 * `placement` (on AWS), its API Gateway key is made next, under that plan, and deleted again if the
 * table write fails; the count is given back if either fails.
 */
export async function createKeyWithGatewayKey(
  account: string,
  placement: UsagePlanPlacement | undefined,
  apiGateway?: APIGatewayClient,
  { limited = false, name, creator }: { limited?: boolean } & Pick<NewKeyOptions, 'name' | 'creator'> = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const counted = await countNewKey(account, { limited });
  const client = placement && (apiGateway ?? new APIGatewayClient({}));
  let gateway: { usagePlan: UsagePlanName; apiGatewayKeyId: string } | undefined;
  try {
    gateway = placement && {
      usagePlan: placement.plan,
      apiGatewayKeyId: await createGatewayKey(placement, { value: counted.usageIdentifier, name: `${account}-${counted.keyId}` }, client),
    };
  } catch (error) {
    await giveBackCount(account, counted);
    throw error;
  }
  return storeCountedKey(account, counted, { gateway, name, creator }).catch(async (error: unknown) => {
    if (gateway) await deleteGatewayKey(gateway.apiGatewayKeyId, client);
    throw error;
  });
}

/**
 * After a revocation in the table: deletes the key's API Gateway key, if it has one, also when the
 * key was revoked before (an earlier revocation cut short between the two). Undefined when the key
 * has none; false when it was already gone.
 */
export async function deleteGatewayKeyOf({ record }: Revocation, apiGateway?: APIGatewayClient): Promise<boolean | undefined> {
  return record.apiGatewayKeyId === undefined ? undefined : deleteGatewayKey(record.apiGatewayKeyId, apiGateway);
}
