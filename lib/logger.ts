import { Logger } from '@aws-lambda-powertools/logger';
import type { MiddlewareObj } from '@middy/core';

/** Structured JSON logs. Never pass an API key or a shared secret to it. */
export const logger = new Logger({ serviceName: 'webhooks' });

/**
 * Puts the invocation's Lambda context (function_request_id, cold_start, ...) on the handler's log
 * lines, with Powertools' own `addContext`. Not its `injectLambdaContext` middleware: that one logs
 * the whole event when `POWERTOOLS_LOGGER_LOG_EVENT` is set, and an API event holds the caller's
 * key in its headers. It also clears a log buffer (we keep none) and redraws debug sampling on
 * every invocation: with this one, `POWERTOOLS_LOGGER_SAMPLE_RATE` is drawn once per execution
 * environment instead.
 */
export function lambdaContextInLogs(): MiddlewareObj {
  return { before: ({ context }) => logger.addContext(context) };
}
