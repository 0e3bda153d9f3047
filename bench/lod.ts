// What AI level of detail buys, in CPU time rather than wall time (so a shared machine's other load does not
// decide the answer): the service's session path — snapshot frame parsed as the WebSocket handler parses it,
// applied, every agent due ticked, decisions encoded — for the same agents and frames in three settings:
//   off   every agent every tick (no level of detail: the code that ran before it existed)
//   ones  every agent has `every: 1` but the session holds a level-of-detail table (its loop runs): the cost of
//         the feature when it changes nothing
//   mix   the `--lod` mix (default 10 % every tick, 30 % every 4th, 60 % every 20th)
// Rounds alternate off / ones / mix; the best round of each is compared. Worker threads count (process.cpuUsage
// covers every thread).
//
//   npm run build && node dist/bench/lod.js [--agents 50000] [--ticks 100] [--rounds 3] [--workers 0] [--mix 1:10,4:30,20:60]
//       [--rows all|due]   (due: with the mix, the game sends a far agent's row only every `every` ticks too)

import { resolve } from 'node:path';
import { pino } from 'pino';
import { playFrames, snapshotFrames } from './lib/session-frames.js';
import { loadLibrary } from '../src/service/http/trees.js';
import { Metrics } from '../src/service/metrics.js';
import { createAgentPool } from '../src/service/pool/index.js';
import { Session } from '../src/service/sessions/session.js';
import { FIELDS, GameWorld } from './load/world.js';
import { everyOf, formatLodMix, parseLodMix, tickFraction, type LodMix } from './load/lod.js';
import { formatMachine, machineInfo } from './lib/machine.js';
import { loadavg } from 'node:os';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '50000' },
    ticks: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    workers: { type: 'string', default: '0' },
    tree: { type: 'string', default: 'guard' },
    mix: { type: 'string', default: 'on' },
    rows: { type: 'string', default: 'all' },
  },
});
const agents = Number(values.agents);
const ticks = Number(values.ticks);
const rounds = Number(values.rounds);
const parsedMix = parseLodMix(values.mix);
if (typeof parsedMix === 'string' || parsedMix === null) throw new Error(`--mix: expected ${typeof parsedMix === 'string' ? parsedMix : 'a mix, not off'}`);
const mix: LodMix = parsedMix;
if (values.rows !== 'all' && values.rows !== 'due') throw new Error('--rows: expected all or due');
/** `due`: with the mix, the game sends an agent's row only every `every` ticks (an agent not listed keeps its observation). */
const rowsDue = values.rows === 'due';

console.log('Canopy level of detail: CPU time of the session path, off / every: 1 with the table / the mix');
console.log(formatMachine(machineInfo()));
console.log(`${agents} agents on ${values.tree}, lockstep, ${ticks} ticks per round, ${rounds} rounds each, alternating; ${values.workers} workers (0: inline); mix ${formatLodMix(mix)}, rows ${rowsDue ? 'only when due' : 'every agent every tick'} (agent-ticks ${(100 * tickFraction(mix)).toFixed(1)} % of agents × ticks)`);

const library = await loadLibrary(resolve('trees'), null);
const pool = await createAgentPool({ trees: resolve('trees'), workers: Number(values.workers), library });
await pool.ready();
const logger = pino({ level: 'silent' });
const metrics = new Metrics({ sessions: () => [], agents: () => 0, workers: () => [], recovery: () => null, frameBuffers: () => ({ reused: 0, allocated: 0 }), threads: () => undefined });

type Setting = 'off' | 'ones' | 'mix';

/** One round: a fresh session and world; returns process CPU ms and agent-ticks run. */
async function round(setting: Setting): Promise<{ cpuMs: number; actions: number }> {
  const session = new Session({ pool, metrics, logger, maxAgents: agents + 1 }, { mode: 'lockstep', hz: 0, fields: [...FIELDS], transport: 'ws' });
  const spawned = session.spawn(
    Array.from({ length: agents }, (_, id) => {
      const every = setting === 'mix' ? everyOf(mix, id) : 1;
      return { id, tree: values.tree, ...(every !== 1 ? { every } : {}) };
    }),
  );
  if (spawned.errors.length > 0) throw new Error(`spawn: ${spawned.errors[0]!.message}`);
  // `ones`: a lod message setting every: 1 makes the session's hosts hold a table (and run its loop).
  if (setting === 'ones') session.setLod([[0, 1]]);
  const world = new GameWorld(agents, 7);
  const frames = snapshotFrames(world, ticks, setting === 'mix' && rowsDue ? (rows, t) => rows.filter((_, i) => (t + i) % everyOf(mix, i) === 0) : undefined);
  const before = process.cpuUsage();
  const actions = await playFrames(session, world, frames);
  const used = process.cpuUsage(before);
  await session.end();
  return { cpuMs: (used.user + used.system) / 1000, actions };
}

const settings: Setting[] = ['off', 'ones', 'mix'];
const best: Record<Setting, number> = { off: Infinity, ones: Infinity, mix: Infinity };
for (let n = 0; n < rounds; n++) {
  for (const setting of settings) {
    const r = await round(setting);
    best[setting] = Math.min(best[setting], r.cpuMs);
    console.log(`  round ${n + 1} ${setting.padEnd(4)}: ${r.cpuMs.toFixed(0)} ms CPU, ${r.actions} actions`);
  }
}
await pool.close();
const sessionAgentTicks = agents * ticks;
const ns = (ms: number): string => ((ms * 1e6) / sessionAgentTicks).toFixed(0);
console.log(`CPU per agent per session tick: off ${ns(best.off)} ns, every: 1 with the table ${ns(best.ones)} ns (×${(best.ones / best.off).toFixed(3)}), mix ${ns(best.mix)} ns (×${(best.mix / best.off).toFixed(3)})`);
console.log(`the mix runs ${(100 * tickFraction(mix)).toFixed(1)} % of the agent-ticks: agents held at the same CPU ≈ ×${(best.off / best.mix).toFixed(2)}; load average ${loadavg()[0]!.toFixed(2)}`);
process.exit(0);
