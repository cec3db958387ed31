import middy from '@middy/core';
import { authorizeRequest } from '../lib/keys/authorize';
import { lambdaContextInLogs } from '../lib/logger';

export const handler = middy(authorizeRequest).use(lambdaContextInLogs());
