import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';

export const STAGE_ARN = 'arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod';
export const methodArn = (method = 'GET', path = '/v1/webhooks') => `${STAGE_ARN}/${method}${path}`;

/** A REQUEST authorizer event as API Gateway sends it, with the given headers. */
export function authorizerEvent(headers: Record<string, string> | null, arn = methodArn()): APIGatewayRequestAuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn: arn,
    resource: '/v1/webhooks',
    path: '/v1/webhooks',
    httpMethod: 'GET',
    headers,
    multiValueHeaders: headers && Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: { stage: 'prod', apiId: 'abcdef123' },
  } as unknown as APIGatewayRequestAuthorizerEvent;
}

export const keyHeader = (key: string) => ({ 'x-service-api-key': key, accept: 'application/json' });
