import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { ConsumerAdmissions } from '../lib/deliveries/admission';
import { consumeDeliveries } from '../lib/deliveries/consumer';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import { lambdaContextInLogs } from '../lib/logger';
import { BACKGROUND_FUNCTIONS, entryPoint } from '../lib/entry-point';

const admissions = new ConsumerAdmissions();

/** The delivery queue's consumer on AWS: the event source mapping hands it a batch, and deletes the records it does not return. */
export const handler = entryPoint(
  BACKGROUND_FUNCTIONS.dispatchDeliveries,
  middy(async (event: SQSEvent): Promise<SQSBatchResponse> => consumeDeliveries(event.Records, { queue: deliveryQueueSender(), admissions })).use(lambdaContextInLogs()),
);
