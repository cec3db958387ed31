import { Fn, Stack } from 'aws-cdk-lib';
import type * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import { errorBody } from '../lib/errors';

/** WAF's range for a rate-based rule's limit. */
const LIMIT_RANGE = { min: 10, max: 2_000_000_000 };
const BLOCKED_BODY_KEY = 'rate-limited';

/**
 * What CloudFront adds to every request it sends the API (console-hosting.ts): the viewer's address,
 * which WAF counts instead of CloudFront's own, and a value only CloudFront sends, so that a caller
 * of the API's own URL cannot pass a made-up address off as the viewer's.
 */
export const VIEWER_ADDRESS_HEADER = 'x-webhooks-viewer-address';
export const VIA_CLOUDFRONT_HEADER = 'x-webhooks-via-cloudfront';
/** The value CloudFront sends in VIA_CLOUDFRONT_HEADER: the UUID of the stack's id, which only the account sees. */
export const viaCloudFrontToken = (scope: Construct) => Fn.select(2, Fn.split('/', Stack.of(scope).stackId));

export const rateLimitedMessage = (limit: number) =>
  `Too many requests from this IP address: the limit is ${limit} requests in 5 minutes; slow down and retry after the time in the Retry-After header`;

/**
 * A WAF web ACL on the API's stage with a rate-based rule: a client IP address that sent more than
 * `rateLimitPer5Minutes` requests in the last 5 minutes is answered 429, in the API's error shape, until
 * its rate falls, before the authorizer or any function runs. The usage plans throttle per key; a
 * flood of random keys has none, and without this each of its requests costs an authorizer call. A
 * request through CloudFront (the console's origin) is counted by its viewer's address, not by the
 * CloudFront edge's that every viewer near it shares; any other by its own.
 */
export function addApiRateLimit(scope: Construct, stage: apigateway.Stage, name: string, rateLimitPer5Minutes: number): wafv2.CfnWebACL {
  if (!Number.isInteger(rateLimitPer5Minutes) || rateLimitPer5Minutes < LIMIT_RANGE.min || rateLimitPer5Minutes > LIMIT_RANGE.max) {
    throw new Error(`waf.rateLimitPer5Minutes must be a whole number from ${LIMIT_RANGE.min} to ${LIMIT_RANGE.max} (WAF's range), got ${rateLimitPer5Minutes}`);
  }
  const visibility = (metricName: string) => ({ cloudWatchMetricsEnabled: true, metricName, sampledRequestsEnabled: true });
  const rate = { limit: rateLimitPer5Minutes, evaluationWindowSec: 300 };
  const block = { block: { customResponse: { responseCode: 429, customResponseBodyKey: BLOCKED_BODY_KEY, responseHeaders: [{ name: 'Retry-After', value: '60' }] } } };
  const viaCloudFront = {
    byteMatchStatement: {
      fieldToMatch: { singleHeader: { Name: VIA_CLOUDFRONT_HEADER } },
      positionalConstraint: 'EXACTLY',
      searchString: viaCloudFrontToken(scope),
      textTransformations: [{ priority: 0, type: 'NONE' }],
    },
  };
  const acl = new wafv2.CfnWebACL(scope, 'ApiWebAcl', {
    name,
    scope: 'REGIONAL',
    defaultAction: { allow: {} },
    customResponseBodies: {
      [BLOCKED_BODY_KEY]: { contentType: 'APPLICATION_JSON', content: JSON.stringify(errorBody(429, rateLimitedMessage(rateLimitPer5Minutes))) },
    },
    rules: [
      {
        name: 'requests-per-viewer-address',
        priority: 0,
        statement: {
          rateBasedStatement: {
            ...rate,
            aggregateKeyType: 'FORWARDED_IP',
            forwardedIpConfig: { headerName: VIEWER_ADDRESS_HEADER, fallbackBehavior: 'MATCH' },
            scopeDownStatement: viaCloudFront,
          },
        },
        action: block,
        visibilityConfig: visibility(`${name}-requests-per-viewer-address`),
      },
      {
        name: 'requests-per-ip',
        priority: 1,
        statement: { rateBasedStatement: { ...rate, aggregateKeyType: 'IP', scopeDownStatement: { notStatement: { statement: viaCloudFront } } } },
        action: block,
        visibilityConfig: visibility(`${name}-requests-per-ip`),
      },
    ],
    visibilityConfig: visibility(name),
  });
  const association = new wafv2.CfnWebACLAssociation(scope, 'ApiWebAclAssociation', { resourceArn: stage.stageArn, webAclArn: acl.attrArn });
  // The stage must exist before WAF can be attached to it.
  association.node.addDependency(stage);
  return acl;
}
