import path from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';

/**
 * Calls handlers once each in a plain Node process, as Lambda does, and prints their responses as
 * one JSON array. Argument: a JSON array of { entry, event }, entry relative to the project root.
 *
 * Why a process of its own: under jest, errors made by Node's own modules (a refused connection)
 * come from another realm, the AWS SDK fails its `instanceof Error` check and replaces them with a
 * wrapper that has lost their `code` (aws/aws-sdk-js-v3#4273). Here they arrive as on Lambda.
 */
type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

async function main(): Promise<void> {
  const calls = JSON.parse(process.argv[2] ?? '[]') as { entry: string; event: APIGatewayProxyEvent }[];
  const responses: APIGatewayProxyResult[] = [];
  for (const { entry, event } of calls) {
    const { handler } = (await import(path.resolve(__dirname, '../../..', entry))) as { handler: Handler };
    responses.push(await handler(event, {} as Context));
  }
  process.stdout.write(`${JSON.stringify(responses)}\n`);
}

void main();
