// `npm run demo`: starts Canopy and the arena together on loopback and prints the one URL to open.
// Flags: --npcs N (default 300), --hz N (default 20), --port N (arena, default 2567; 0: any free port).
// Canopy runs as its own process; CANOPY_* variables configure it as for `npm start`, except its host and
// port (loopback, any free one) and trees (the bundled ones: the arena needs guard, follower and squad).

import { fileURLToPath } from 'node:url';
import { startCanopyProcess } from './canopy-process.js';
import { startArena } from './server/arena.js';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const raw = at >= 0 ? process.argv[at + 1] : undefined;
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    process.stderr.write(`--${name} must be a whole number, got ${String(raw)}\n`);
    process.exit(2);
  }
  return value;
}

const npcs = flag('npcs', 300);
const hz = flag('hz', 20);
const port = flag('port', 2567);

// Canopy runs in its own process, as it would next to a real game server (they share no event loop).
const canopy = await startCanopyProcess();
const canopyPort = canopy.port;
const arena = await startArena({
  canopyUrl: canopy.wsUrl,
  canopyHttp: canopy.http,
  npcs,
  hz,
  host: '127.0.0.1',
  port,
  staticDir: fileURLToPath(new URL('./dist', import.meta.url)),
});

process.stdout.write(
  [
    `Canopy  http://127.0.0.1:${canopyPort}  (session ${arena.room.link.session}: ${npcs} NPCs on guard, follower and squad at ${hz} Hz)`,
    '',
    `  Open the arena:  ${arena.url}`,
    '',
    'Ctrl-C stops both.',
    '',
  ].join('\n'),
);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(1), 5000).unref();
  void arena
    .close()
    .then(() => canopy.close())
    .then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
