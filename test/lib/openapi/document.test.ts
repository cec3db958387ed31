import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Ajv2020 from 'ajv/dist/2020';
import { openApiDocument } from '../../../lib/openapi/document';
import { routeList } from '../../../lib/routes';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../../lib/schemas/fields';

const ROOT = path.resolve(__dirname, '../../..');
const OPENAPI_FILE = 'openapi.json';
const run = promisify(execFile);
const document = openApiDocument();
type Operation = { operationId: string; summary: string; description: string; parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[]; responses: Record<string, unknown>; requestBody?: unknown };
const operations = document.paths as Record<string, Record<string, Operation>>;

describe('the API document', () => {
  it('is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator, against the official schema)', async () => {
    const cli = path.join(ROOT, 'node_modules/@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
    const { stdout } = await run(process.execPath, [cli, path.join(ROOT, OPENAPI_FILE)]);
    expect(JSON.parse(stdout)).toEqual({ valid: true });
  });

  it('is committed as generated, with the client types: `npm run openapi` after changing a route or a schema', async () => {
    expect(JSON.parse(readFileSync(path.join(ROOT, OPENAPI_FILE), 'utf8'))).toEqual(document);
    // openapi-typescript is an ES module with ES-module dependencies: run the generator as npm does.
    await expect(run(process.execPath, ['--import', 'tsx', 'infra/openapi-cli.ts', '--check'], { cwd: ROOT })).resolves.toBeDefined();
  }, 60_000);

  it('has every route as an operation with its success status, parameters, body and errors', () => {
    const listed = Object.values(operations).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId));
    expect(listed.sort()).toEqual(routeList.map((route) => route.operationId).sort());
    for (const route of routeList) {
      const operation = operations[route.path]![route.method.toLowerCase()]!;
      expect(operation.operationId).toBe(route.operationId);
      expect(Object.keys(operation.responses)).toContain(String(route.successStatus));
      for (const status of ['400', '401', '403', '429', '500']) expect(Object.keys(operation.responses)).toContain(status);
      if (route.path.includes('{id}')) {
        expect(operation.responses['404']).toBeDefined();
        expect(operation.parameters.find((parameter) => parameter.name === 'id')).toMatchObject({ in: 'path', required: true });
      }
      expect(operation.requestBody !== undefined).toBe(route.body !== undefined);
      if (route.body) expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['413', '415']));
    }
    expect(operations['/v1/webhooks/{id}/deliveries/{messageId}/retry']!.post!.responses['409']).toBeDefined();
    expect(operations['/v1/webhooks:getSharedSecret']!.get!.responses['404']).toBeDefined();
  });

  it('describes every operation beyond its summary', () => {
    for (const methods of Object.values(operations)) {
      for (const operation of Object.values(methods)) {
        expect(operation.description).toEqual(expect.stringMatching(/\S/));
        expect(operation.description).not.toBe(operation.summary);
      }
    }
    expect(operations['/v1/webhooks/{id}']!.delete!.description).toMatch(/inactive[\s\S]*permanent=true[\s\S]*for good/);
    expect(operations['/v1/webhooks/{id}/deliveries/{messageId}/retry']!.post!.description).toMatch(/409 while an attempt of the message is under way/);
  });

  it('gives parameters their bounds, defaults and enums', () => {
    const list = operations['/v1/webhooks']!.get!.parameters;
    expect(list.find((parameter) => parameter.name === 'pageSize')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
    });
    expect(list.find((parameter) => parameter.name === 'status')!.schema).toEqual({ type: 'string', enum: ['active', 'inactive'] });
    const permanent = operations['/v1/webhooks/{id}']!.delete!.parameters.find((parameter) => parameter.name === 'permanent');
    expect(permanent!.schema).toEqual({ type: 'string', enum: ['true', 'false'], default: 'false' });
    const createBody = operations['/v1/webhooks']!.post!.requestBody as { content: { 'application/json': { schema: unknown } } };
    const create = createBody.content['application/json'].schema as { properties: Record<string, Record<string, unknown>>; required: string[] };
    expect(create.required.sort()).toEqual(['chainId', 'eventType', 'metadata', 'url']);
    expect(create.properties.name).toMatchObject({ type: 'string', maxLength: 256, default: '' });
    expect(create.properties.includeLogs).toMatchObject({ type: 'boolean', default: false });
  });

  it('describes the notification as a webhook whose body the hosted API example matches', () => {
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(document, 'doc');
    const validate = ajv.getSchema('doc#/components/schemas/AddressActivityNotification')!;
    const example = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/hosted-address-activity-example.json'), 'utf8'));
    expect(validate(example)).toBe(true);
    expect(validate({ ...example, messageId: undefined })).toBe(false);
    const entry = document.webhooks.address_activity.post;
    expect(entry.parameters.map((parameter) => parameter.name)).toContain('x-signature');
    expect(entry.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/AddressActivityNotification');
  });

  it('secures every operation with the x-service-api-key header', () => {
    expect(document.security).toEqual([{ apiKey: [] }]);
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-service-api-key' });
  });
});
