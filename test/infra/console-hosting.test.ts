import { Stack } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import { Match } from 'aws-cdk-lib/assertions';
import { CONSOLE_CONTENT_SECURITY_POLICY, CONSOLE_SECURITY_HEADERS, IMMUTABLE_CACHE_CONTROL } from '../../infra/console-headers';
import { CONSOLE_PATHS_FUNCTION, ConsoleHosting, VIEWER_ADDRESS_FUNCTION } from '../../infra/console-hosting';
import { VIA_CLOUDFRONT_HEADER, VIEWER_ADDRESS_HEADER } from '../../infra/api-rate-limit';
import { CONSOLE_DIST } from '../../infra/console-build';
import { ofType, synthIn, type Resources } from './stack-template';

/** CloudFront's managed policies, by their fixed ids. */
const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const API_PATHS = ['/v1/*', '/health', '/openapi.json'];

/** The construct in a stack of its own, beside a REST API (the whole stack's wiring is in webhooks-stack.test.ts). */
const synthHosting = () =>
  synthIn((app) => {
    const stack = new Stack(app, 'console-hosting');
    const api = new apigateway.RestApi(stack, 'Api', { deployOptions: { stageName: 'test' } });
    api.root.addResource('v1').addMethod('GET', new apigateway.MockIntegration());
    new ConsoleHosting(stack, 'Console', { assets: CONSOLE_DIST, api, apiPaths: API_PATHS, logRetentionDays: 30 });
    return stack;
  });

/** The viewer-request function run as CloudFront would: its code evaluated, given an event. */
const viewerRequest = new Function(`${CONSOLE_PATHS_FUNCTION}; return handler;`)() as (event: unknown) => any;
const requestFor = (uri: string) => viewerRequest({ request: { method: 'GET', uri, headers: {}, querystring: {} } });

describe('the console on AWS', () => {
  const { template, resources } = synthHosting();
  const [distribution] = ofType(resources, 'AWS::CloudFront::Distribution').map(([, resource]) => resource.Properties.DistributionConfig);
  /** The console's bucket and the access-log bucket. */
  const bucketNamed = (prefix: string) => ofType(resources, 'AWS::S3::Bucket').find(([id]) => id.startsWith(prefix))!;

  it('keeps the files in a private bucket, reachable over TLS only, not a website', () => {
    const [bucketId, bucket] = bucketNamed('ConsoleBucket');
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.Properties.WebsiteConfiguration).toBeUndefined();
    const [, policy] = ofType(resources, 'AWS::S3::BucketPolicy').find(([, candidate]) => candidate.Properties.Bucket.Ref === bucketId)!;
    const statements: any[] = policy.Properties.PolicyDocument.Statement;
    expect(statements).toContainEqual(expect.objectContaining({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
    // Read by CloudFront alone, for this distribution alone; nothing else is allowed.
    const allowed = statements.filter((statement) => statement.Effect === 'Allow');
    expect(allowed).toEqual([
      expect.objectContaining({
        Action: 's3:GetObject',
        Principal: { Service: 'cloudfront.amazonaws.com' },
        Condition: { StringEquals: { 'AWS:SourceArn': expect.objectContaining({ 'Fn::Join': expect.anything() }) } },
      }),
    ]);
    expect(JSON.stringify(allowed[0].Resource)).toContain(bucketId);
  });

  it('reads the bucket through origin access control, not a public endpoint or an origin access identity', () => {
    const [[oacId, oac]] = ofType(resources, 'AWS::CloudFront::OriginAccessControl') as [[string, Resources[string]]];
    expect(oac.Properties.OriginAccessControlConfig).toMatchObject({ OriginAccessControlOriginType: 's3', SigningBehavior: 'always', SigningProtocol: 'sigv4' });
    const s3Origin = distribution.Origins.find((origin: any) => origin.S3OriginConfig);
    expect(s3Origin.OriginAccessControlId).toEqual({ 'Fn::GetAtt': [oacId, 'Id'] });
    expect(s3Origin.S3OriginConfig.OriginAccessIdentity).toBe('');
    expect(ofType(resources, 'AWS::CloudFront::CloudFrontOriginAccessIdentity')).toHaveLength(0);
  });

  it('sends the API paths to the API uncached, with every method, the query string and only the headers the API reads', () => {
    const apiOrigin = distribution.Origins.find((origin: any) => origin.CustomOriginConfig);
    const [[policyId, policy]] = ofType(resources, 'AWS::CloudFront::OriginRequestPolicy') as [[string, Resources[string]]];
    expect(JSON.stringify(apiOrigin.DomainName)).toContain('execute-api');
    expect(apiOrigin.CustomOriginConfig.OriginProtocolPolicy).toBe('https-only');
    expect(distribution.CacheBehaviors.map((behavior: any) => behavior.PathPattern)).toEqual(API_PATHS);
    for (const behavior of distribution.CacheBehaviors) {
      expect(behavior).toMatchObject({
        TargetOriginId: apiOrigin.Id,
        AllowedMethods: expect.arrayContaining(['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE']),
        CachePolicyId: CACHING_DISABLED,
        OriginRequestPolicyId: { Ref: policyId },
        ViewerProtocolPolicy: 'https-only',
      });
    }
    // No cookie, no other header (Host, Authorization, a viewer's own): the API key header, the body's media type, and the viewer's address as CloudFront saw it.
    expect(policy.Properties.OriginRequestPolicyConfig).toMatchObject({
      HeadersConfig: { HeaderBehavior: 'whitelist', Headers: ['x-service-api-key', 'content-type', VIEWER_ADDRESS_HEADER] },
      QueryStringsConfig: { QueryStringBehavior: 'all' },
      CookiesConfig: { CookieBehavior: 'none' },
    });
    expect(distribution.DefaultCacheBehavior).toMatchObject({ AllowedMethods: ['GET', 'HEAD'], ViewerProtocolPolicy: 'redirect-to-https' });
  });

  it("tells the API's WAF rule each viewer's address, in place of any the viewer sent, and that the request came through CloudFront", () => {
    const apiOrigin = distribution.Origins.find((origin: any) => origin.CustomOriginConfig);
    expect(apiOrigin.OriginCustomHeaders).toEqual([{ HeaderName: VIA_CLOUDFRONT_HEADER, HeaderValue: { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] } }]);
    const [functionId] = ofType(resources, 'AWS::CloudFront::Function').find(([, fn]) => fn.Properties.FunctionCode === VIEWER_ADDRESS_FUNCTION)!;
    for (const behavior of distribution.CacheBehaviors) {
      expect(behavior.FunctionAssociations).toEqual([{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [functionId, 'FunctionARN'] } }]);
    }
    const viewerAddress = new Function(`${VIEWER_ADDRESS_FUNCTION}; return handler;`)() as (event: unknown) => any;
    const request = viewerAddress({ viewer: { ip: '203.0.113.7' }, request: { method: 'GET', uri: '/v1/webhooks', headers: { [VIEWER_ADDRESS_HEADER]: { value: '198.51.100.1' } } } });
    expect(request.headers[VIEWER_ADDRESS_HEADER]).toEqual({ value: '203.0.113.7' });
  });

  it('adds the local gateway\'s console headers, the same Content-Security-Policy, and HSTS to every response', () => {
    const [[policyId, policy]] = ofType(resources, 'AWS::CloudFront::ResponseHeadersPolicy') as [[string, Resources[string]]];
    const config = policy.Properties.ResponseHeadersPolicyConfig;
    expect(config.SecurityHeadersConfig.ContentSecurityPolicy).toEqual({ ContentSecurityPolicy: CONSOLE_CONTENT_SECURITY_POLICY, Override: true });
    expect(config.SecurityHeadersConfig).toMatchObject({
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: CONSOLE_SECURITY_HEADERS['X-Frame-Options'], Override: true },
      ReferrerPolicy: { ReferrerPolicy: CONSOLE_SECURITY_HEADERS['Referrer-Policy'], Override: true },
      StrictTransportSecurity: { AccessControlMaxAgeSec: 31536000, IncludeSubdomains: true, Override: true },
    });
    expect(config.CustomHeadersConfig.Items).toEqual([
      { Header: 'Cross-Origin-Opener-Policy', Value: CONSOLE_SECURITY_HEADERS['Cross-Origin-Opener-Policy'], Override: true },
    ]);
    for (const behavior of [distribution.DefaultCacheBehavior, ...distribution.CacheBehaviors]) expect(behavior.ResponseHeadersPolicyId).toEqual({ Ref: policyId });
  });

  it('redirects / and /console, and answers the console\'s pages with index.html, in a viewer-request function', () => {
    template.hasResourceProperties('AWS::CloudFront::Function', { FunctionCode: CONSOLE_PATHS_FUNCTION, FunctionConfig: Match.objectLike({ Runtime: 'cloudfront-js-2.0' }) });
    const [functionId] = ofType(resources, 'AWS::CloudFront::Function').map(([id]) => id);
    expect(distribution.DefaultCacheBehavior.FunctionAssociations).toEqual([{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [functionId, 'FunctionARN'] } }]);

    expect(requestFor('/')).toMatchObject({ statusCode: 302, headers: { location: { value: '/console/' } } });
    expect(requestFor('/console')).toMatchObject({ statusCode: 301, headers: { location: { value: '/console/' } } });
    expect(requestFor('/').headers['content-security-policy']).toEqual({ value: CONSOLE_CONTENT_SECURITY_POLICY });
    for (const page of ['/console/', '/console/webhooks', '/console/webhooks/0b6c8f1e-5d0a-4c8e-9d56-1f0e2a7b3c4d/deliveries']) {
      expect(requestFor(page)).toMatchObject({ uri: '/console/index.html' });
    }
    for (const file of ['/console/assets/index-DzglC0CW.js', '/console/assets/missing', '/console/index.html', '/console/favicon.svg', '/v1/webhooks']) {
      expect(requestFor(file)).toMatchObject({ uri: file });
    }
  });

  it('uploads the hashed assets to be cached for good and the rest to be revalidated, invalidating index.html', () => {
    const deployments = ofType(resources, 'Custom::CDKBucketDeployment').map(([, resource]) => resource.Properties);
    expect(deployments).toHaveLength(2);
    const assets = deployments.find((deployment) => deployment.Include !== undefined)!;
    const pages = deployments.find((deployment) => deployment.Include === undefined)!;
    expect(assets).toMatchObject({ DestinationBucketKeyPrefix: 'console/', Exclude: ['*'], Include: ['assets/*'], Prune: false, SystemMetadata: { 'cache-control': IMMUTABLE_CACHE_CONTROL } });
    expect(pages).toMatchObject({ DestinationBucketKeyPrefix: 'console/', Exclude: ['assets/*', '.*'], Prune: false, SystemMetadata: { 'cache-control': 'no-cache' } });
    expect(pages.DistributionPaths).toEqual(['/console/index.html']);
  });

  it("logs the distribution's and the console bucket's access to a private bucket that keeps them for the stage's retention", () => {
    const [logsId, logs] = bucketNamed('ConsoleAccessLogs');
    expect(logs.Properties).toMatchObject({
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      LifecycleConfiguration: { Rules: [{ ExpirationInDays: 30, Status: 'Enabled' }] },
    });
    expect(distribution.Logging).toEqual({ Bucket: { 'Fn::GetAtt': [logsId, 'RegionalDomainName'] }, Prefix: 'cloudfront/' });
    expect(bucketNamed('ConsoleBucket')[1].Properties.LoggingConfiguration).toEqual({ DestinationBucketName: { Ref: logsId }, LogFilePrefix: 'console-bucket/' });
  });

  it('lets the upload touch only the CDK asset bucket (read) and the console bucket, and invalidate', () => {
    const [bucketId] = bucketNamed('ConsoleBucket');
    const statements: { Action: string[]; Resource: unknown }[] = ofType(resources, 'AWS::IAM::Policy')
      .filter(([id]) => id.startsWith('CustomCDKBucketDeployment'))
      .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement);
    expect(statements).toHaveLength(3);
    const [assetBucket, consoleBucket, invalidation] = statements as [(typeof statements)[number], (typeof statements)[number], (typeof statements)[number]];
    expect(assetBucket.Action.every((action) => /^s3:(Get|List)/.test(action))).toBe(true);
    expect(JSON.stringify(assetBucket.Resource)).toContain('cdk-hnb659fds-assets-');
    expect(consoleBucket.Action.every((action) => action.startsWith('s3:'))).toBe(true);
    expect(consoleBucket.Resource).toEqual([{ 'Fn::GetAtt': [bucketId, 'Arn'] }, { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] }]);
    expect(invalidation.Action.sort()).toEqual(['cloudfront:CreateInvalidation', 'cloudfront:GetInvalidation']);
  });
});
