/**
 * A CLI's output piped into a reader that stops early (`npm run chain -- accounts | head -1`) ends
 * the CLI quietly, as Unix tools end, instead of with an unhandled EPIPE stack trace.
 */
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(0);
});
