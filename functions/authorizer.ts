import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { authorizeRequest } from '../lib/keys/authorize';
import { logger } from '../lib/logger';

export const handler = middy(authorizeRequest).use(injectLambdaContext(logger));
