import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { resolveApiKey } from './api-keys';

export const API_KEY_HEADER = 'x-service-api-key';

/** What API Gateway does with a Lambda authorizer that throws exactly this: answer 401. */
export const UNAUTHORIZED = 'Unauthorized';

export function apiKeyFromHeaders(headers: Record<string, string | undefined> | null | undefined): string | undefined {
  for (const name in headers) {
    const value = headers[name];
    if (value && name.length === API_KEY_HEADER.length && name.toLowerCase() === API_KEY_HEADER) return value;
  }
  return undefined;
}

/**
 * The allow policy covers every method of the stage, not just the one called: API Gateway caches
 * the result per key and reuses it for the caller's next requests, whichever route they hit.
 */
function stageWideResource(methodArn: string): string {
  // arn:aws:execute-api:<region>:<account>:<api id>/<stage>/<method>/<path...>
  const [apiArn, stage] = methodArn.split('/');
  return `${apiArn}/${stage}/*`;
}

/**
 * REQUEST authorizer: resolves the x-service-api-key header to its account. The key's usage
 * identifier is returned as `usageIdentifierKey`: API Gateway meters and throttles the caller under
 * the usage plan of the API Gateway API key with that value. It is not the caller's key, except for
 * a key made before usage identifiers existed, whose API Gateway key's value is the key itself.
 */
export async function authorizeRequest(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const key = apiKeyFromHeaders(event.headers);
  const resolved = key === undefined ? undefined : await resolveApiKey(key);
  if (key === undefined || resolved === undefined) throw new Error(UNAUTHORIZED);
  return {
    principalId: resolved.account,
    usageIdentifierKey: resolved.usageIdentifier,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: stageWideResource(event.methodArn) }],
    },
    context: { accountId: resolved.account, keyId: resolved.keyId },
  };
}
