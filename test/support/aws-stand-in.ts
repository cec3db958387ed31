/**
 * A loopback stand-in for the AWS services with no local stand-in of their own that the stack's
 * functions call: Secrets Manager's GetSecretValue (AWS JSON 1.1) and the four API Gateway calls
 * of the key operations (REST JSON). A process pointed at it (AWS_ENDPOINT_URL) sends nothing to
 * AWS: any other call is answered as an unknown operation, and every call is recorded.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInCall {
  /** The function that made it: the access key id it signed with (a bundle run's is its function's name). */
  caller: string;
  /** `secretsmanager.GetSecretValue`, or an HTTP method and path (`POST /apikeys`). */
  operation: string;
  body: Record<string, any>;
}

export interface AwsStandIn {
  endpoint: string;
  calls: StandInCall[];
  /** The ARN under which the stand-in serves `value` as the secret named `name`. */
  putSecret(name: string, value: string): string;
  /** API Gateway's usage plans, by name: what GetUsagePlans lists. */
  usagePlans: Map<string, string>;
  close(): Promise<void>;
}

export const secretArn = (name: string) => `arn:aws:secretsmanager:us-east-1:000000000000:secret:${name}-AbCdEf`;

export async function startAwsStandIn(): Promise<AwsStandIn> {
  const secrets = new Map<string, { name: string; value: string }>();
  const usagePlans = new Map<string, string>();
  const calls: StandInCall[] = [];

  const answer = (response: ServerResponse, status: number, body?: unknown, errorType?: string) => {
    response.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
    response.end(body === undefined ? '' : JSON.stringify(errorType ? { __type: errorType, message: body } : body));
  };

  const serve = (request: IncomingMessage, response: ServerResponse, body: Record<string, any>) => {
    const target = request.headers['x-amz-target'];
    const path = new URL(request.url!, 'http://stand-in').pathname;
    const operation = typeof target === 'string' ? target : `${request.method} ${path}`;
    const caller = /Credential=([^/,\s]+)\//.exec(String(request.headers.authorization ?? ''))?.[1] ?? '';
    calls.push({ caller, operation, body });
    if (operation === 'secretsmanager.GetSecretValue') {
      const secret = secrets.get(body.SecretId);
      if (!secret) return answer(response, 400, `Secrets Manager can't find the specified secret.`, 'ResourceNotFoundException');
      return answer(response, 200, { ARN: body.SecretId, Name: secret.name, SecretString: secret.value, VersionId: randomUUID(), VersionStages: ['AWSCURRENT'] });
    }
    if (operation === 'GET /usageplans') return answer(response, 200, { item: [...usagePlans].map(([name, id]) => ({ id, name })) });
    if (operation === 'POST /apikeys') return answer(response, 201, { id: randomUUID().slice(0, 10), name: body.name, enabled: body.enabled, tags: body.tags });
    const usagePlanKey = /^POST \/usageplans\/([^/]+)\/keys$/.exec(operation);
    if (usagePlanKey && [...usagePlans.values()].includes(usagePlanKey[1]!)) return answer(response, 201, { id: body.keyId, type: body.keyType });
    if (/^DELETE \/apikeys\/[^/]+$/.test(operation)) return answer(response, 202);
    return answer(response, 400, `the stand-in does not answer ${operation}`, 'UnknownOperationException');
  };

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      serve(request, response, text ? JSON.parse(text) : {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    putSecret: (name, value) => {
      secrets.set(secretArn(name), { name, value });
      return secretArn(name);
    },
    usagePlans,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
