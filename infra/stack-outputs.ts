import type { UsagePlanName } from '../lib/config/stages';

export const stackNameFor = (stage: string) => `webhooks-${stage}`;

/** Names of the stack outputs that the keys CLI reads to find a deployed stage, and the console's address. */
export const STACK_OUTPUTS = {
  apiUrl: 'ApiUrl',
  consoleUrl: 'ConsoleUrl',
  tableName: 'TableName',
  alarmTopicArn: 'AlarmTopicArn',
  usagePlanId: (plan: UsagePlanName) => `UsagePlanId${plan[0]!.toUpperCase()}${plan.slice(1)}`,
} as const;
