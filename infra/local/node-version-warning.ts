/**
 * Under Node.js 20 the AWS SDK warns in every process that its releases from January 2027 on need
 * Node.js 22 (ten lines each time). The README recommends 22 (the Lambda runtime) and says 20 works;
 * this is the SDK's own switch for that one warning, so every other warning still shows.
 * Imported first by each entry point that runs on the developer's Node.js (npm start, the keys CLI,
 * the bench, jest); child processes inherit it.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
