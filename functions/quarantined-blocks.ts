import middy from '@middy/core';
import { answerQuarantineRequest, type QuarantineRequest } from '../lib/chains/quarantine';
import { followedChainOnce } from '../lib/config/chains';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import { lambdaContextInLogs, logger } from '../lib/logger';
import { BACKGROUND_FUNCTIONS, entryPoint } from '../lib/entry-point';

/**
 * Invoked by an operator, one function per followed chain (CHAIN_ID), e.g.
 * `aws lambda invoke --function-name webhooks-prod-quarantinedBlocks43114 --payload '{"retake":123}' out.json`:
 * `{}` lists the chain's quarantined blocks, `{"retake": <block>}` takes one again.
 */
export const handler = entryPoint(
  BACKGROUND_FUNCTIONS.quarantinedBlocks,
  middy(async (event: QuarantineRequest | null) => answerQuarantineRequest(await followedChainOnce(), event, logger, deliveryQueueSender())).use(lambdaContextInLogs()),
);
