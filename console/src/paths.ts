/// <reference types="vite/client" />

/**
 * The console's addresses, under Vite's `base` (infra/console-headers.ts's CONSOLE_PATH, "/console/"):
 * the one place that knows it. Ids go in encoded; nothing from the API but ids is ever put in a path.
 */
const CONSOLE_ROOT = import.meta.env.BASE_URL;

const under = (path: string) => `${CONSOLE_ROOT}${path}`;
const webhook = (id: string, section = '') => under(`webhooks/${encodeURIComponent(id)}${section ? `/${section}` : ''}`);

export const paths = {
  overview: CONSOLE_ROOT,
  webhooks: under('webhooks'),
  /** The list filtered by status: the filter lives in the URL (`?status=`). */
  webhooksWithStatus: (status: string) => (status ? `${under('webhooks')}?${new URLSearchParams({ status })}` : under('webhooks')),
  newWebhook: under('webhooks/new'),
  secret: under('secret'),
  apiKeys: under('api-keys'),
  webhook,
  editWebhook: (id: string) => webhook(id, 'edit'),
  delivery: (id: string, messageId: string) => `${webhook(id, 'deliveries')}/${encodeURIComponent(messageId)}`,
};

/** A route pattern of app.tsx's <Router> under the console's root, in preact-iso's syntax (`webhooks/:id`). */
export const routePattern = (pattern: string) => `${CONSOLE_ROOT}${pattern}`;
