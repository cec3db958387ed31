// Imported first by a test file that reads the service's log lines: whether the local gateway
// writes its request lines is read once, when its logger is loaded.
process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
