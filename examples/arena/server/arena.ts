// The arena server: Colyseus on a plain Node HTTP server that also serves the built browser page
// (examples/arena/dist). One arena room is created at start and runs whether or not anyone watches.

import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, sep } from 'node:path';
import { Server, matchMaker } from '@colyseus/core';
import { WebSocketTransport } from '@colyseus/ws-transport';
import { ArenaRoom, type ArenaOptions } from './room.js';

/** Options of {@link startArena}. */
export interface StartArenaOptions extends ArenaOptions {
  readonly host?: string;
  /** 0: any free port. */
  readonly port?: number;
  /** The built page (`vite build`); without it only the Colyseus endpoints answer. */
  readonly staticDir?: string;
}

/** A running arena server. */
export interface Arena {
  readonly url: string;
  readonly port: number;
  readonly room: ArenaRoom;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.map': 'application/json',
};

/** Starts Colyseus with the arena room on `host:port` and creates the room (it connects to Canopy). */
export async function startArena(options: StartArenaOptions): Promise<Arena> {
  const http = createServer();
  const server = new Server({ transport: new WebSocketTransport({ server: http }), greet: false });
  server.define('arena', ArenaRoom);
  await server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  const staticDir = options.staticDir;
  if (staticDir !== undefined) {
    // Colyseus answers every request it is given (404 for unknown paths): give it its own routes
    // (/matchmake/..., health checks) and serve the page's files for every other GET.
    const colyseus = http.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
    http.removeAllListeners('request');
    http.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === 'GET' && !(req.url ?? '/').startsWith('/matchmake') && !(req.url ?? '/').startsWith('/__')) serveStatic(staticDir, req, res);
      else for (const listener of colyseus) listener.call(http, req, res);
    });
  }
  const { port } = http.address() as AddressInfo;
  const cache = await matchMaker.createRoom('arena', options);
  const room = matchMaker.getLocalRoomById(cache.roomId) as ArenaRoom;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}/`,
    port,
    room,
    close: () => closeAll(server, http),
  };
}

async function closeAll(server: Server, http: HttpServer): Promise<void> {
  // gracefullyShutdown disposes the rooms (the link says bye to Canopy) and closes the transport.
  await server.gracefullyShutdown(false);
  if (http.listening) await new Promise<void>((resolve) => http.close(() => resolve()));
}

function serveStatic(root: string, req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0]!;
  const rel = normalize(decodeURIComponent(path === '/' ? '/index.html' : path)).replace(/^([/\\])+/, '');
  const file = join(root, rel);
  if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    return;
  }
  res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
  createReadStream(file).pipe(res);
}
