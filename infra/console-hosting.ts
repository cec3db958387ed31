import { type CfnElement, Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { API_KEY_HEADER } from '../lib/keys/authorize';
import { VIA_CLOUDFRONT_HEADER, VIEWER_ADDRESS_HEADER, viaCloudFrontToken } from './api-rate-limit';
import { CONSOLE_ASSETS_PATH, CONSOLE_PATH, CONSOLE_SECURITY_HEADERS, IMMUTABLE_CACHE_CONTROL } from './console-headers';

/**
 * The request headers the API reads (the authorizer its key, the body parser the media type), and the
 * viewer's address that the API's WAF rule counts (api-rate-limit.ts): all it is sent through CloudFront.
 */
const API_REQUEST_HEADERS = [API_KEY_HEADER, 'content-type', VIEWER_ADDRESS_HEADER];

export interface ConsoleHostingProps {
  /** The built console (console/dist): index.html and assets/. */
  assets: string;
  /** The API the console calls, served by the same distribution so that it is on the console's origin (no CORS). */
  api: apigateway.RestApi;
  /** The API's path patterns the distribution sends to it (`/v1/*`, and the keyless paths). */
  apiPaths: string[];
  /** How long the distribution's and the bucket's access logs are kept. */
  logRetentionDays: number;
}

/**
 * The console on AWS (docs/console.md#on-aws): its files in a private bucket that only CloudFront
 * reads (origin access control), and one distribution serving them and, as a second origin, the API,
 * with the same headers as the local gateway (console-headers.ts).
 */
export class ConsoleHosting extends Construct {
  readonly distribution: cloudfront.Distribution;
  /** The console's address: `https://<distribution domain>/console/`. */
  readonly url: string;

  constructor(scope: Construct, id: string, props: ConsoleHostingProps) {
    super(scope, id);
    // The distribution's and the console bucket's access logs, kept for the stage's log retention. CloudFront's
    // standard logs are delivered with an ACL: the bucket takes them as their writer's.
    const accessLogs = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      lifecycleRules: [{ expiration: Duration.days(props.logRetentionDays) }],
    });
    Validations.of(accessLogs).acknowledge({ id: 'AwsSolutions-S1', reason: 'The access-log bucket itself: its own access would be logged into itself' });
    // Kept when the stack is deleted (the default): emptying it on delete takes a custom resource, and its files are rebuilt from the source anyway.
    const bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'console-bucket/',
    });
    // CloudFront's names are global to the account: the region in them lets one stage deploy to two regions.
    const { stackName, region } = Stack.of(this);
    const cloudFrontName = (suffix: string) => `${stackName}-${region}-${suffix}`;
    const headers = new cloudfront.ResponseHeadersPolicy(this, 'Headers', {
      responseHeadersPolicyName: cloudFrontName('console-headers'),
      comment: 'The console headers of infra/console-headers.ts, and HSTS',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: CONSOLE_SECURITY_HEADERS['Content-Security-Policy'], override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: CONSOLE_SECURITY_HEADERS['X-Frame-Options'] as cloudfront.HeadersFrameOption, override: true },
        referrerPolicy: { referrerPolicy: CONSOLE_SECURITY_HEADERS['Referrer-Policy'] as cloudfront.HeadersReferrerPolicy, override: true },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
      },
      customHeadersBehavior: {
        customHeaders: [{ header: 'Cross-Origin-Opener-Policy', value: CONSOLE_SECURITY_HEADERS['Cross-Origin-Opener-Policy'], override: true }],
      },
    });
    const paths = new cloudfront.Function(this, 'Paths', {
      comment: 'Redirects / to /console/ and answers the console pages with its index.html',
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      code: cloudfront.FunctionCode.fromInline(CONSOLE_PATHS_FUNCTION),
    });
    // Only what the API reads: a viewer's cookies and other headers never reach it (nor Host, which API Gateway routes by).
    const apiRequest = new cloudfront.OriginRequestPolicy(this, 'ApiRequest', {
      originRequestPolicyName: cloudFrontName('api-request'),
      comment: 'What the webhooks API reads: its key header, content-type and the query string',
      headerBehavior: cloudfront.OriginRequestHeaderBehavior.allowList(...API_REQUEST_HEADERS),
      queryStringBehavior: cloudfront.OriginRequestQueryStringBehavior.all(),
      cookieBehavior: cloudfront.OriginRequestCookieBehavior.none(),
    });
    const viewerAddress = new cloudfront.Function(this, 'ViewerAddress', {
      comment: "Tells the API's WAF rule the viewer's address, in place of any the viewer sent",
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      code: cloudfront.FunctionCode.fromInline(VIEWER_ADDRESS_FUNCTION),
    });
    const api: cloudfront.BehaviorOptions = {
      origin: new origins.RestApiOrigin(props.api, { customHeaders: { [VIA_CLOUDFRONT_HEADER]: viaCloudFrontToken(this) } }),
      functionAssociations: [{ function: viewerAddress, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: apiRequest,
      responseHeadersPolicy: headers,
    };
    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'The webhooks console and its API',
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      enableLogging: true,
      logBucket: accessLogs,
      logFilePrefix: 'cloudfront/',
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(bucket, {
          originAccessControl: new cloudfront.S3OriginAccessControl(this, 'OriginAccess', { originAccessControlName: cloudFrontName('console') }),
        }),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
        functionAssociations: [{ function: paths, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
      },
      additionalBehaviors: Object.fromEntries(props.apiPaths.map((pattern) => [pattern, api])),
    });
    this.url = `https://${this.distribution.distributionDomainName}${CONSOLE_PATH}`;
    const findings: Record<string, string> = {
      'AwsSolutions-CFR1': 'A console for any account, wherever it is: no country is refused',
      'AwsSolutions-CFR2': "WAF is opt-in per stage, on the API's stage (docs/deploy-aws.md); the console's files are static",
      'AwsSolutions-CFR4': "The default *.cloudfront.net certificate, whose minimum CloudFront fixes at TLSv1; a custom domain's certificate would allow TLSv1.2_2021 and up",
    };
    for (const [id, reason] of Object.entries(findings)) Validations.of(this.distribution).acknowledge({ id, reason });

    // Two uploads for two lifetimes: hashed assets for good, the rest (index.html) revalidated on every
    // load. Neither prunes (which would delete the other's files); old assets stay for pages still open.
    const prefix = CONSOLE_PATH.slice(1);
    const assetsPattern = `${CONSOLE_ASSETS_PATH.slice(CONSOLE_PATH.length)}*`;
    const files = s3deploy.Source.asset(props.assets);
    new s3deploy.BucketDeployment(this, 'Assets', {
      sources: [files],
      exclude: ['*'],
      include: [assetsPattern],
      destinationBucket: bucket,
      destinationKeyPrefix: prefix,
      cacheControl: [s3deploy.CacheControl.fromString(IMMUTABLE_CACHE_CONTROL)],
      prune: false,
    });
    new s3deploy.BucketDeployment(this, 'Pages', {
      sources: [files],
      exclude: [assetsPattern, '.*'],
      destinationBucket: bucket,
      destinationKeyPrefix: prefix,
      cacheControl: [s3deploy.CacheControl.noCache()],
      prune: false,
      distribution: this.distribution,
      distributionPaths: [`${CONSOLE_PATH}index.html`],
    });
    // CDK's upload function (a singleton of the stack, its runtime chosen by CDK), granted what it needs on the asset and console buckets:
    // acknowledged on it alone, so that the same findings on any other function still fail.
    const stack = Stack.of(this);
    const upload = stack.node.children.find((child) => child.node.id.startsWith('Custom::CDKBucketDeployment'))!;
    const uploads: Record<string, string> = {
      'AwsSolutions-L1': "CDK's BucketDeployment function, whose runtime CDK chooses",
      ...Object.fromEntries(['Abort*', 'DeleteObject*', 'GetBucket*', 'GetObject*', 'List*'].map((action) => [`AwsSolutions-IAM5[Action::s3:${action}]`, "CDK's upload of the console's files, on its buckets alone"])),
      'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]': "CDK's upload reading the console's files from the bootstrap asset bucket",
      [`AwsSolutions-IAM5[Resource::<${stack.getLogicalId(bucket.node.defaultChild as CfnElement)}.Arn>/*]`]: "CDK's upload writing the console's files to its bucket",
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]': "CDK's upload function's role, which CDK makes",
    };
    for (const [id, reason] of Object.entries(uploads)) Validations.of(upload).acknowledge({ id, reason });
  }
}

/** The viewer-request function of the API's paths: the viewer's address in VIEWER_ADDRESS_HEADER, whatever the viewer sent there. */
export const VIEWER_ADDRESS_FUNCTION = `function handler(event) {
  event.request.headers['${VIEWER_ADDRESS_HEADER}'] = { value: event.viewer.ip };
  return event.request;
}`;

/** The console's headers as a CloudFront function's response carries them (its redirects: the response headers policy covers the rest). */
const FUNCTION_RESPONSE_HEADERS = Object.fromEntries(Object.entries(CONSOLE_SECURITY_HEADERS).map(([name, value]) => [name.toLowerCase(), { value }]));

/**
 * The viewer-request function (CloudFront Functions, JavaScript runtime 2.0), before the cache: `/` and
 * `/console` redirect to `/console/`; any other path under `/console/` but `assets/` whose last segment
 * has no extension is a page of the single-page app, fetched as `/console/index.html`.
 */
export const CONSOLE_PATHS_FUNCTION = `function handler(event) {
  var request = event.request;
  var uri = request.uri;
  if (uri === '/' || uri === '${CONSOLE_PATH.slice(0, -1)}') {
    var headers = ${JSON.stringify(FUNCTION_RESPONSE_HEADERS)};
    headers.location = { value: '${CONSOLE_PATH}' };
    return { statusCode: uri === '/' ? 302 : 301, statusDescription: uri === '/' ? 'Found' : 'Moved Permanently', headers: headers };
  }
  if (uri.startsWith('${CONSOLE_PATH}') && !uri.startsWith('${CONSOLE_ASSETS_PATH}') && uri.slice(uri.lastIndexOf('/') + 1).indexOf('.') === -1) {
    request.uri = '${CONSOLE_PATH}index.html';
  }
  return request;
}
`;
