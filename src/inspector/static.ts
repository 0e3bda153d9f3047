// Serves the inspector page built by Vite (dist/web, part of `npm run build`): the HTML at /inspector
// behind the API keys (a browser passes `?key=`), the hashed assets (code, no data) under
// /inspector/assets/ to anyone, so the page's own script and style load without a key.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

/** The built page's folder: `dist/web` under the package root (found from this file, compiled or not). */
export function webRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'web');
    dir = dirname(dir);
  }
  return join(process.cwd(), 'dist', 'web');
}

/** GET /inspector/assets/* — registered outside the API scope. */
export const inspectorAssets: FastifyPluginAsync = async (app) => {
  const root = join(webRoot(), 'assets');
  if (!existsSync(root)) return;
  await app.register(fastifyStatic, {
    root,
    prefix: '/inspector/assets/',
    index: false,
    // Names carry a content hash: cache for a year.
    immutable: true,
    maxAge: '365d',
  });
};

/** GET /inspector and /inspector/ — registered inside the API scope (keys checked). */
export const inspectorPage: FastifyPluginAsync = async (app) => {
  const file = join(webRoot(), 'index.html');
  const html = existsSync(file) ? readFileSync(file, 'utf8') : null;
  const page = async (_request: unknown, reply: import('fastify').FastifyReply) => {
    if (html === null) {
      return reply.code(503).type('text/plain').send('the inspector page is not built: run `npm run build`');
    }
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html);
  };
  app.get('/inspector', page);
  app.get('/inspector/', page);
};
