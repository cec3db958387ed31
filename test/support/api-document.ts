import Ajv2020 from 'ajv/dist/2020';
import { routeTable } from '../../infra/local/route-table';
import { openApiDocument } from '../../lib/openapi/document';
import { routeList } from '../../lib/routes';

const document = openApiDocument();
const DOCUMENT_ID = 'openapi.json';
// strict off: the document holds OpenAPI keywords (paths, webhooks, ...) around its JSON Schemas.
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(document, DOCUMENT_ID);
const matchRoute = routeTable(routeList);
/** What the local server's HTTP parser answers before any route is matched (see answerClientError). */
const BEFORE_ROUTING = new Set([408, 431]);

type ResponseEntry = { $ref?: string; content?: Record<string, { schema: { $ref: string } }> };

/**
 * Checks a response the API gave against the API document: its operation must list the status,
 * and the body must match that response's schema. Responses no operation gave (no route, a method
 * not allowed, a request the HTTP parser refused) must be in the error shape. Every HTTP test's
 * `call` runs this, so a response the document does not describe fails the test that got it.
 */
export function checkAgainstApiDocument(method: string, pathname: string, status: number, body: unknown): void {
  if (method === 'HEAD' || pathname === '/openapi.json' || pathname === '/docs' || pathname.startsWith('/docs/')) return;
  const match = matchRoute(method, pathname);
  let schemaRef = '#/components/schemas/Error';
  let where = `${method} ${pathname} (no operation)`;
  if (match.kind === 'found' && !BEFORE_ROUTING.has(status)) {
    where = `${match.route.operationId} (${method} ${match.route.path})`;
    const operation = (document.paths as Record<string, Record<string, { responses: Record<string, ResponseEntry> }>>)[match.route.path]![
      method.toLowerCase()
    ]!;
    let entry = operation.responses[String(status)];
    if (!entry) throw new Error(`${where} answered ${status}, a status the API document does not list for it`);
    if (entry.$ref) entry = (document.components.responses as Record<string, ResponseEntry>)[entry.$ref.split('/').pop()!]!;
    schemaRef = entry.content!['application/json']!.schema.$ref;
  } else if (status < 400) {
    throw new Error(`${where} answered ${status}`);
  }
  const validate = ajv.getSchema(`${DOCUMENT_ID}${schemaRef}`)!;
  if (!validate(body)) {
    throw new Error(`${where} answered ${status} with a body that does not match ${schemaRef}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 2000)}`);
  }
}
