import * as lambda from 'aws-cdk-lib/aws-lambda';

/** The newest Node.js LTS that Lambda serves: its major is the bundles' esbuild target (LAMBDA_BUNDLING). */
export const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_24_X;

/**
 * How every Lambda is bundled: the CDK stack passes these to NodejsFunction, and the benchmark
 * builds the same bundle with esbuild to time its cold start.
 */
export const LAMBDA_BUNDLING = {
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  target: 'node24',
  /**
   * The AWS SDK is bundled and minified with the handler rather than taken from the runtime's copy:
   * the benchmark's cold-start figures show which loads faster (README, Performance).
   */
  externalModules: [] as string[],
};
