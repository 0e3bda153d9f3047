// Arena test harness: a real Canopy service (port 0, a worker thread, the bundled trees) and the arena
// server (Colyseus, port 0) connected to it.

import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { defaultConfig } from '../../src/service/config.js';
import { createServer, type CanopyServer } from '../../src/service/server.js';
import { startArena, type Arena } from '../../examples/arena/server/arena.js';

/** The repository's root folder. */
export const REPO = fileURLToPath(new URL('../../', import.meta.url));

export interface Running {
  readonly canopy: CanopyServer;
  readonly canopyHttp: string;
  readonly arena: Arena;
  close(): Promise<void>;
}

/** Canopy and the arena with `npcs` NPCs; `staticDir` serves the built page. */
export async function startBoth(npcs: number, staticDir?: string): Promise<Running> {
  const canopy = await createServer(
    { ...defaultConfig(), host: '127.0.0.1', port: 0, workers: 1, logLevel: 'silent', trees: `${REPO}trees` },
    { logger: pino({ level: process.env.CANOPY_TEST_LOG ?? 'silent' }) },
  );
  const { port } = await canopy.listen();
  const canopyHttp = `http://127.0.0.1:${port}`;
  const arena = await startArena({ canopyUrl: `ws://127.0.0.1:${port}/v1/ws`, canopyHttp, npcs, ...(staticDir !== undefined ? { staticDir } : {}) });
  return {
    canopy,
    canopyHttp,
    arena,
    close: async () => {
      await arena.close();
      await canopy.close();
    },
  };
}

/** Resolves once `check` is true, polling on the room's own clock; rejects after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs: number, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
