import '../../infra/local/node-version-warning';
// Tests assert on responses, not log lines; LOG_LEVEL=INFO npx jest shows them.
process.env.POWERTOOLS_LOG_LEVEL ??= process.env.LOG_LEVEL ?? 'SILENT';
