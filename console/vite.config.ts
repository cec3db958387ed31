import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { CONSOLE_PATH } from '../infra/console-headers';

// Built by infra/console-build.ts (npm start, npm test, cdk synth); served under /console/ by
// the local gateway and by CloudFront (docs/console.md).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: CONSOLE_PATH,
  // Preact's JSX runtime through Vite's own transformer: @preact/preset-vite would bring Babel.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    // The polyfill is an inline script, which the Content-Security-Policy forbids.
    modulePreload: { polyfill: false },
    // Imported files (fonts, images) stay files under assets/: inlined, they would be data: URLs, which font-src 'self' refuses.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
