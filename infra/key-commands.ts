import { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import type { UsagePlanName } from '../lib/config/stages';
import type { ApiKeyRecord } from '../lib/keys/api-keys';
import { createKeyWithGatewayKey } from '../lib/keys/gateway-keys';
import { revokeApiKey, revokeApiKeyById } from '../lib/keys/key-revocation';
import { usagePlanOf, type DeployedStage } from './deployed-stage';

/**
 * The keys CLI's create and revoke, apart from reading arguments and finding the store. On a
 * deployed stage they make and delete the key's API Gateway key (lib/keys/gateway-keys.ts).
 */
export async function createKey(
  account: string,
  options: { deployed?: DeployedStage; plan: UsagePlanName; name?: string; apiGateway?: APIGatewayClient },
): Promise<{ key: string; record: ApiKeyRecord }> {
  const { deployed, plan, name, apiGateway = new APIGatewayClient({}) } = options;
  return createKeyWithGatewayKey(account, deployed && usagePlanOf(deployed, plan), apiGateway, { name });
}

/** A key to revoke: the key itself (read from a file or stdin), or the id `keys list` shows. */
export type RevocationTarget = { key: string } | { account: string; keyId: string };

/**
 * Revokes the key in the table with every key it made (directly or not), then deletes their API
 * Gateway keys. Run again after a failure midway (or after the API Gateway key was deleted by hand), it
 * does what is left and says so. Undefined for an unknown key.
 */
export async function revokeKey(target: RevocationTarget, apiGateway = new APIGatewayClient({})): Promise<string | undefined> {
  const revocation = 'key' in target ? await revokeApiKey(target.key, apiGateway) : await revokeApiKeyById(target.account, target.keyId, apiGateway);
  if (!revocation) return undefined;
  const { record, alreadyRevoked, gatewayKeyDeleted, descendantsRevoked } = revocation;
  const named = `key ${record.keyId} of account '${record.account}'`;
  const made = descendantsRevoked === 0 ? '' : ` With it, the ${descendantsRevoked} ${descendantsRevoked === 1 ? 'key' : 'keys'} it made (directly or not) ${descendantsRevoked === 1 ? 'was' : 'were'} revoked.`;
  if (!alreadyRevoked) {
    if (gatewayKeyDeleted === undefined) return `Revoked ${named}.${made}`;
    return gatewayKeyDeleted
      ? `Revoked ${named} and deleted its API Gateway key ${record.apiGatewayKeyId}.${made}`
      : `Revoked ${named}; its API Gateway key ${record.apiGatewayKeyId} was already deleted.${made}`;
  }
  const already = `Key ${record.keyId} of account '${record.account}' was already revoked at ${record.revokedAt}`;
  return gatewayKeyDeleted
    ? `${already}; its API Gateway key ${record.apiGatewayKeyId} was still there (the earlier revocation did not finish) and is now deleted.${made}`
    : `${already}.${made}`;
}
