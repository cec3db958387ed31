import { Logger } from '@aws-lambda-powertools/logger';

/** Structured JSON logs. Never pass an API key or a shared secret to it. */
export const logger = new Logger({ serviceName: 'webhooks' });
