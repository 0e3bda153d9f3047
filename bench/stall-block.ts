// Issue 13's closing figure "workers killed by a blocked main thread (target: none)": a real service (2 worker
// threads, stall watchdog at --stall ms), one HTTP lockstep session with --agents agents; for --rounds ticks the
// main thread is blocked synchronously for 2 × stall right after the tick is posted to the workers (what a huge
// HTTP validate or a GC storm does). Counts workers replaced and agents reported lost.
//
//   npx tsx bench/stall-block.ts [--agents 3000] [--stall 500] [--rounds 3]

import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { defaultConfig } from '../src/service/config.js';
import { createServer } from '../src/service/server.js';
import { formatMachine, machineInfo } from './lib/machine.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, { options: { agents: { type: 'string', default: '3000' }, stall: { type: 'string', default: '500' }, rounds: { type: 'string', default: '3' } } });
const agents = Number(values.agents);
const stallMs = Number(values.stall);
const rounds = Number(values.rounds);

const dir = await mkdtemp(join(tmpdir(), 'canopy-stall-'));
await mkdir(join(dir, 'trees'));
await writeFile(join(dir, 'trees', 'talker.json'), JSON.stringify({ root: { type: 'action', action: 'say', args: { x: 'self.x' }, instant: true } }));

let replaced = 0;
const logger = pino({ level: 'error' }, { write: (line: string) => void (line.includes('worker crashed') && replaced++) });
const server = await createServer({ ...defaultConfig(), host: '127.0.0.1', port: 0, workers: 2, trees: join(dir, 'trees'), maxAgents: agents, tuning: { workerStallMs: stallMs } }, { logger });
const { port } = await server.listen();
const base = `http://127.0.0.1:${port}`;
const call = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
  const r = await fetch(base + path, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await r.json()) as Record<string, unknown>;
};

// Block right after the session's tick is posted to the workers, before their replies can be read.
const pool = server.pool;
const tick = pool.tick.bind(pool);
let blockNext = false;
pool.tick = (...args) => {
  const p = tick(...args);
  if (blockNext) {
    blockNext = false;
    const until = performance.now() + 2 * stallMs;
    while (performance.now() < until) {
      // the main thread is busy
    }
  }
  return p;
};

const session = (await call('POST', '/v1/sessions', { fields: ['x'] })).session as string;
const ids = Array.from({ length: agents }, (_, i) => i);
await call('POST', `/v1/sessions/${session}/spawn`, { agents: ids.map((id) => ({ id, tree: 'talker' })) });
let lost = 0;
let t = 0;
const step = async (block: boolean): Promise<void> => {
  t++;
  blockNext = block;
  const d = await call('POST', `/v1/sessions/${session}/tick`, { tick: t, time: t / 20, agents: ids.map((id) => [id, t]) });
  lost += ((d.errors as unknown[][] | undefined) ?? []).filter((e) => e[1] === 'E_INTERNAL').length;
};
await step(false);
for (let r = 0; r < rounds; r++) {
  await step(true);
  await step(false); // lost agents are reported with the next tick
}
console.log(formatMachine(machineInfo()));
console.log(`agents ${agents}, stallMs ${stallMs}, main thread blocked ${2 * stallMs} ms in each of ${rounds} ticks (machine shared with other jobs)`);
console.log(`workers killed by a blocked main thread: ${replaced}; agents lost: ${lost}; agents alive at the end: ${pool.agentCount(session)}`);
await server.close();
await rm(dir, { recursive: true, force: true });
