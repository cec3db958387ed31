import { Logger } from '@aws-lambda-powertools/logger';

/**
 * The local gateway's own logger. The handlers' logger carries the Lambda context of the invocation
 * it serves; the gateway runs many invocations at once in one process, so its lines (one per
 * request) must not borrow that context.
 */
export const localLogger = new Logger({ serviceName: 'webhooks-local-gateway' });
