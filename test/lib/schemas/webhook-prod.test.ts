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
    expect(urlIssues(url)).toEqual(['url: must be an absolute https:// URL, e.g. https://example.com/webhooks']);
  });

  it('refuses http://localhost on update too', () => {
    expect(updateWebhookBody.safeParse({ url: 'http://localhost/hooks' }).success).toBe(false);
  });

  it('accepts https urls', () => {
    expect(urlIssues('https://receiver.example.com/hooks')).toEqual([]);
  });

  it.each([
    ['https://127.0.0.1:8443/hooks', 'loopback address 127.0.0.1'],
    ['https://[::1]/hooks', 'loopback address ::1'],
    ['https://10.0.0.1/hooks', 'private address 10.0.0.1'],
    ['https://169.254.169.254/latest/meta-data/', 'link-local address 169.254.169.254'],
  ])('refuses the IP literal url %s, which no target may be in production', (url, reason) => {
    expect(urlIssues(url)).toEqual([`url: must point at a public address, not ${reason}`]);
  });

  it('accepts https://localhost', () => {
    expect(urlIssues('https://localhost:8443/hooks')).toEqual([]);
  });
});
