import { createWebhookBody, updateWebhookBody } from '../../../lib/schemas/webhook';
import { webhookInput } from '../../support/factories';

// lib/config/runtime reads STAGE once per module registry, on the first validation of a url:
// set before any test of this file runs.
process.env.STAGE = 'prod';

const urlIssues = (url: string) => {
  const result = createWebhookBody.safeParse(webhookInput({ url }));
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe("webhook urls in stage 'prod'", () => {
  it.each(['http://localhost:3000/hooks', 'http://127.0.0.1/hooks', 'http://[::1]/'])('refuses %s', (url) => {
    expect(urlIssues(url)).toEqual(['url: must be an https:// URL']);
  });

  it('refuses http://localhost on update too', () => {
    expect(updateWebhookBody.safeParse({ url: 'http://localhost/hooks' }).success).toBe(false);
  });

  it('accepts https urls', () => {
    expect(urlIssues('https://receiver.example.com/hooks')).toEqual([]);
  });

  it('accepts https://localhost', () => {
    expect(urlIssues('https://localhost:8443/hooks')).toEqual([]);
  });
});
