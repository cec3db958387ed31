import middy from '@middy/core';
import { authorizeRequest } from '../lib/keys/authorize';
import { lambdaContextInLogs } from '../lib/logger';
import { BACKGROUND_FUNCTIONS, entryPoint } from '../lib/entry-point';

export const handler = entryPoint(BACKGROUND_FUNCTIONS.authorizer, middy(authorizeRequest).use(lambdaContextInLogs()));
