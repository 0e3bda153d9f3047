// Builds the arena's browser page (web/) into examples/arena/dist, which the arena server serves.
// Separate from the service's build: nothing of the demo ends up in dist/ or the image.

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: `${here}web`,
  base: './',
  logLevel: 'warn',
  build: { outDir: `${here}dist`, emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
});
