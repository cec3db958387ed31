import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { ApiError, methodNotAllowedMessage } from '../../lib/errors';
import { OPENAPI_DOCUMENT_PATH, type OpenApiDocument } from '../../lib/openapi/document';

export const API_REFERENCE_PATH = '/docs';

const REFERENCE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Webhooks API reference</title>
<link rel="stylesheet" href="${API_REFERENCE_PATH}/swagger-ui.css">
<link rel="icon" type="image/png" href="${API_REFERENCE_PATH}/favicon-32x32.png">
</head>
<body>
<div id="reference"></div>
<script src="${API_REFERENCE_PATH}/swagger-ui-bundle.js"></script>
<script src="${API_REFERENCE_PATH}/reference.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
const REFERENCE_SCRIPT = `SwaggerUIBundle({
  url: '${OPENAPI_DOCUMENT_PATH}',
  dom_id: '#reference',
  deepLinking: true,
  displayOperationId: true,
  validatorUrl: null,
});
`;

/** Everything the page loads comes from this server: nothing from the internet. */
const CONTENT_SECURITY_POLICY = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'";

/** A file's content type and bytes, read on its first request and kept. */
type Page = () => { type: string; content: Buffer };

/**
 * The API document and a reference page rendering it (Swagger UI, its assets from node_modules),
 * served without an API key, as the deployed API serves the document. Returns undefined for any
 * other path.
 */
export function apiReference(document: OpenApiDocument): (method: string, pathname: string) => APIGatewayProxyResult | undefined {
  const swaggerUi = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const asset = (file: string, type: string): Page => () => ({ type, content: readFileSync(path.join(swaggerUi, file)) });
  const text = (type: string, content: string): Page => () => ({ type, content: Buffer.from(content) });
  const pages = new Map<string, Page>([
    [OPENAPI_DOCUMENT_PATH, text('application/json', JSON.stringify(document))],
    [API_REFERENCE_PATH, text('text/html; charset=utf-8', REFERENCE_PAGE)],
    // As typed or completed by a browser: the page's own links are absolute, so either serves it.
    [`${API_REFERENCE_PATH}/`, text('text/html; charset=utf-8', REFERENCE_PAGE)],
    [`${API_REFERENCE_PATH}/reference.js`, text('text/javascript; charset=utf-8', REFERENCE_SCRIPT)],
    [`${API_REFERENCE_PATH}/swagger-ui.css`, asset('swagger-ui.css', 'text/css; charset=utf-8')],
    [`${API_REFERENCE_PATH}/swagger-ui-bundle.js`, asset('swagger-ui-bundle.js', 'text/javascript; charset=utf-8')],
    [`${API_REFERENCE_PATH}/favicon-32x32.png`, asset('favicon-32x32.png', 'image/png')],
  ]);
  const loaded = new Map<string, ReturnType<Page>>();
  return (method, pathname) => {
    const page = pages.get(pathname);
    if (!page) return undefined;
    if (method !== 'GET' && method !== 'HEAD') throw new ApiError(405, methodNotAllowedMessage(['GET']), { Allow: 'GET' });
    let body = loaded.get(pathname);
    if (!body) loaded.set(pathname, (body = page()));
    return {
      statusCode: 200,
      headers: { 'Content-Type': body.type, 'Cache-Control': 'no-cache', 'Content-Security-Policy': CONTENT_SECURITY_POLICY, 'X-Content-Type-Options': 'nosniff' },
      body: method === 'HEAD' ? '' : body.content.toString('base64'),
      isBase64Encoded: true,
    };
  };
}
