/** The console's addresses of one webhook's pages, built from ids only. */
export const webhookPath = (id: string, section = '') => `/console/webhooks/${encodeURIComponent(id)}${section ? `/${section}` : ''}`;
export const deliveryPath = (id: string, messageId: string) => `${webhookPath(id, 'deliveries')}/${encodeURIComponent(messageId)}`;
