// Builds the inspector page (Preact, d3-hierarchy, uPlot) into dist/web; the service serves it at /inspector.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/inspector/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    assetsDir: 'assets',
    chunkSizeWarningLimit: 200,
  },
});
