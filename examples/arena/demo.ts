// `npm run demo`: starts Canopy and the arena together on loopback and prints the one URL to open.
// Flags: --npcs N (default 300), --hz N (default 20), --port N (arena, default 2567; 0: any free port).
// Canopy's own settings come from CANOPY_* variables as for `npm start` (its port defaults to any free one).

import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parseConfig } from '../../src/service/config.js';
import { createServer } from '../../src/service/server.js';
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
const repo = fileURLToPath(new URL('../../', import.meta.url));

const config = parseConfig([], { CANOPY_HOST: '127.0.0.1', CANOPY_PORT: '0', CANOPY_LOG_LEVEL: 'warn', CANOPY_TREES: `${repo}trees`, ...process.env });
const canopy = await createServer(config, { logger: pino({ level: config.logLevel }) });
const { port: canopyPort } = await canopy.listen();
const arena = await startArena({
  canopyUrl: `ws://127.0.0.1:${canopyPort}/v1/ws`,
  canopyHttp: `http://127.0.0.1:${canopyPort}`,
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
