/**
 * How every Lambda is bundled: the CDK stack passes these to NodejsFunction, and the benchmark
 * builds the same bundle with esbuild to time its cold start.
 */
export const LAMBDA_BUNDLING = {
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  target: 'node22',
  /**
   * The AWS SDK is bundled and minified with the handler rather than taken from the runtime's copy:
   * the benchmark's cold-start figures show which loads faster (README, Performance).
   */
  externalModules: [] as string[],
};
