import { randomBytes } from 'node:crypto';
import '../../infra/local/node-version-warning';
// Tests assert on responses, not log lines; LOG_LEVEL=INFO npx jest shows them.
process.env.POWERTOOLS_LOG_LEVEL ||= process.env.LOG_LEVEL || 'SILENT';

// The test files share one DynamoDB Local (npm run test:dynamodb-local), where each would see the
// others' items in its table (a scan, a chain's checkpoint and lease). DynamoDB Local keeps the
// tables of each access key apart: each file signs with a key of its own, so that it has a store
// of its own there, as it has its own dynalite otherwise.
if (process.env.TEST_DYNAMODB_ENDPOINT) {
  process.env.AWS_ACCESS_KEY_ID = `test${randomBytes(8).toString('hex')}`;
  process.env.AWS_SECRET_ACCESS_KEY = 'test';
}
