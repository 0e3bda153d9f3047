// Cost of a hot reload (docs/reload.md) on a loaded pool: 2 worker threads, 20,000 agents on one tree. A/B in
// one run: the first tick of 20,000 freshly spawned agents (the same work minus the restart: every agent starts
// an action) against the tick right after a reload that restarts every agent (halt + cancels + new agent on the
// new version), and the tick after a reload where half restart. Also the main thread's pool.reload().
//
//   npm run build && node dist/bench/reload.js      (or: npx tsx bench/reload.ts)

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TreeLibrary } from '../src/bt/library.js';
import { createAgentPool } from '../src/service/pool/index.js';
import { benchArgs } from './lib/args.js';
import { formatMachine, machineInfo } from './lib/machine.js';

benchArgs(import.meta.url, { options: {} });

const AGENTS = 20_000;
const version = (action: string) => ({
  blackboard: { alert: 0, n: 1 },
  root: { type: 'sequence', children: [{ type: 'condition', expr: 'bb.n > 0' }, { type: 'action', action, args: { alert: 'bb.alert' } }] },
});

console.log(formatMachine(machineInfo()));
console.log('The machine may be shared with other work: read the ratios, not the times.');
const dir = await mkdtemp(join(tmpdir(), 'canopy-bench-reload-'));
await writeFile(join(dir, 'guard.json'), JSON.stringify(version('patrol')));
const pool = await createAgentPool({ trees: dir, workers: 2 });
await pool.ready();
pool.createSession('s', { fields: null, maxAgents: AGENTS });
pool.spawn('s', Array.from({ length: AGENTS }, (_, i) => ({ id: i, tree: 'guard', ...(i % 2 === 0 ? {} : { reload: 'restart' as const }) })));
let tick = 0;
const timed = async (): Promise<{ ms: number; cancels: number; actions: number }> => {
  const t = performance.now();
  const d = await pool.tick('s', ++tick, tick * 0.05, 0.05, tick);
  return { ms: performance.now() - t, cancels: d.cancels.length, actions: d.actions.length };
};
const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (let i = 0; i < 5; i++) await timed(); // warm-up

for (let round = 1; round <= 5; round++) {
  // Baseline: a fresh session's 20,000 agents, spawned and ticked once (each starts its action).
  const fresh = `fresh${round}`;
  pool.createSession(fresh, { fields: null, maxAgents: AGENTS });
  pool.spawn(fresh, Array.from({ length: AGENTS }, (_, i) => ({ id: i, tree: 'guard' })));
  await pool.tick(fresh, 1, 0, 0, 1); // spawn messages handled (agents built)
  pool.destroySession(fresh);
  pool.createSession(fresh, { fields: null, maxAgents: AGENTS });
  pool.spawn(fresh, Array.from({ length: AGENTS }, (_, i) => ({ id: i, tree: 'guard' })));
  const t0 = performance.now();
  await pool.tick(fresh, 1, 0, 0, 1);
  const firstTick = performance.now() - t0;
  pool.destroySession(fresh);
  const plain = [firstTick];
  const build = (action: string) => {
    const r = TreeLibrary.fromDefinitions({ guard: version(action) });
    if (!r.ok) throw new Error('bench tree invalid');
    return r.library;
  };
  let t = performance.now();
  const restartLib = build(`hunt${round}`);
  const compileMs = performance.now() - t;
  t = performance.now();
  const outcome = pool.reload(restartLib, new Set(['guard']), 'restart');
  const installMs = performance.now() - t;
  const restarted = await timed();
  pool.reload(build(`rest${round}`), new Set(['guard']), 'keep'); // odd ids asked for restart: half restart here
  const half = await timed();
  console.log(
    `round ${round}: fresh agents' first tick (spawn included) ${median(plain).toFixed(1)} ms; reload (restart all ${outcome.get('s')?.get('guard')?.restarted}): ` +
      `main thread compile ${compileMs.toFixed(1)} ms + install ${installMs.toFixed(1)} ms, next tick ${restarted.ms.toFixed(1)} ms ` +
      `(${(restarted.ms / median(plain)).toFixed(1)}×, ${restarted.cancels} cancels); keep-policy reload (half restart) next tick ${half.ms.toFixed(1)} ms ` +
      `(${(half.ms / median(plain)).toFixed(1)}×)`,
  );
}
await pool.close();
await rm(dir, { recursive: true, force: true });
