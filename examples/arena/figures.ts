// `npm run demo:figures`: the arena as a load test of Canopy. Starts Canopy (its default worker count)
// and the arena room with --npcs NPCs (default 5000) at 20 Hz, warms up, then measures the room's own
// tick time and Canopy's lateness (decisions' receipt − send of the snapshot they were based on).
// Lives here, not in bench/: bench/ is compiled into the service's build, the arena is not.

import { availableParallelism, cpus, loadavg } from 'node:os';
import { startCanopyProcess } from './canopy-process.js';
import { startArena } from './server/arena.js';

const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const npcs = arg('npcs', 5000);
const warmupS = arg('warmup', 10);
const measureS = arg('seconds', 30);

// Canopy in its own process (its default worker count: one per core), the arena in this one.
const canopy = await startCanopyProcess();
const arena = await startArena({ canopyUrl: canopy.wsUrl, canopyHttp: canopy.http, npcs, hz: 20 });
const room = arena.room;
const sleep = (s: number): Promise<void> => new Promise((r) => setTimeout(r, s * 1000));

await sleep(warmupS);
room.tickTime.reset();
room.link.lateness.reset();
const before = { tick: room.tick, ...room.world.counters, frames: room.link.counters.frames };
const startedAt = performance.now();
await sleep(measureS);
const elapsed = (performance.now() - startedAt) / 1000;
const s = room.stats();
const f = (v: number): string => v.toFixed(1);
const ticks = s.tick - before.tick;
console.log(`machine: ${cpus()[0]?.model ?? '?'} × ${availableParallelism()}, Node ${process.version}, load average ${loadavg().map((v) => v.toFixed(1)).join(' ')} (shared with other work)`);
console.log(`arena: ${npcs} NPCs at 20 Hz, Canopy in its own process with its default workers (one per core); warm-up ${warmupS} s, measured ${f(elapsed)} s`);
console.log(`room ticks: ${ticks} (${f(ticks / elapsed)} per second; 20 due)`);
console.log(`room tick time (world step + rows + snapshot): p50 ${f(s.tickTime.p50)} ms, p99 ${f(s.tickTime.p99)} ms, max ${f(s.tickTime.max)} ms (budget 50 ms)`);
console.log(`Canopy lateness (decisions received − send of the snapshot they used): p50 ${f(s.lateness.p50)} ms, p99 ${f(s.lateness.p99)} ms, max ${f(s.lateness.max)} ms over ${s.lateness.n} decisions frames`);
console.log(`actions started ${s.world.started - before.started}, results ${s.world.results - before.results}, cancels ${s.world.cancels - before.cancels} (stale ${s.world.staleCancels - before.staleCancels}), chases ${s.world.chases - before.chases}, flees ${s.world.flees - before.flees}`);
console.log(`decisions frames received ${s.link.frames - before.frames} (${f((s.link.frames - before.frames) / elapsed)} per second)`);
console.log(`errors: service ${s.link.serviceErrors}, agents ${s.link.agentErrors}; problems: ${room.link.problems.length === 0 ? 'none' : room.link.problems.join(' | ')}`);
await arena.close();
await canopy.close();
process.exit(0);
