// The inspector's engine cost, A/B in one run and interleaved tick by tick (so a shared machine's load hits
// every variant alike): A = the pre-trace Agent.tick, B = today's Agent.tick with nobody watched, C = the same
// with W agents watched (frames recorded in a 30 s ring buffer). Same tree, same world, same decisions.
//
//   npm run build && node --expose-gc dist/bench/trace-ab.js [--agents 10000] [--ticks 400] [--warmup 100]
//                                                          [--tree guard|large] [--watch 10] [--baseline FILE]
//
// --baseline: A is then the engine of another build (its dist/src/bt/index.js), loaded into this process, e.g.
// the commit before the trace existed:
//   git archive 8c38eba | tar -x -C /tmp/canopy-base && ln -s $PWD/node_modules /tmp/canopy-base/ \
//     && (cd /tmp/canopy-base && npx tsc -p tsconfig.build.json)
//   node dist/bench/trace-ab.js --baseline /tmp/canopy-base/dist/src/bt/index.js
// Without it, A is a copy of the pre-trace Agent.tick in bench/lib/canopy.ts over today's agents.

import { performance } from 'node:perf_hooks';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Agent, DecisionSink } from '../src/bt/index.js';
import { Agent as EngineAgent } from '../src/bt/index.js';
import { BenchGame, benchTree, LARGE_TREE_DURATIONS, untracedTick } from './lib/canopy.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { FLEE_TICKS, MOVE_TICKS, sameCounts, TICK_SECONDS } from './lib/population.js';
import { DEFAULT_SEED, World } from './lib/world.js';
import { repoRoot } from './load/service.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '10000' },
    ticks: { type: 'string', default: '400' },
    warmup: { type: 'string', default: '100' },
    tree: { type: 'string', default: 'guard' },
    watch: { type: 'string', default: '10' },
    baseline: { type: 'string' },
  },
});
const agents = int('agents', values.agents, 1);
const ticks = int('ticks', values.ticks, 10);
const warmup = int('warmup', values.warmup, 0);
const watch = int('watch', values.watch, 0);
const treeName = values.tree;
if (treeName !== 'guard' && treeName !== 'large') fail(`--tree must be guard or large, not '${treeName}'`);
if (watch > agents) fail('--watch must be at most --agents');
const durations = treeName === 'guard' ? { flee: FLEE_TICKS, moveToWaypoint: MOVE_TICKS } : LARGE_TREE_DURATIONS;
const tree = benchTree(treeName);

/** The part of another build's engine the baseline needs. */
interface BaselineEngine {
  Agent: new (tree: unknown, id: number) => Agent;
  TreeLibrary: { loadFolder(dir: string): Promise<{ ok: true; library: { get(name: string): unknown } } | { ok: false }> };
}

type TickFn = (a: Agent, time: number, dt: number, out: DecisionSink) => void;
const agentTick: TickFn = (a, time, dt, out) => a.tick(time, dt, out);

interface Variant {
  readonly name: string;
  readonly description: string;
  readonly agents: Agent[];
  readonly game: BenchGame;
  readonly tick: TickFn;
  /** Milliseconds per timed tick. */
  readonly times: number[];
}

const world = new World(agents, DEFAULT_SEED);
function variant(name: string, description: string, tick: TickFn, watched: number): Variant {
  const list = world.observations.map((o, i) => {
    const a = new EngineAgent(tree, i);
    a.self = o;
    if (i < watched) a.watch(600);
    return a;
  });
  return { name, description, agents: list, game: new BenchGame(durations), tick, times: [] };
}
async function baselineVariant(file: string): Promise<Variant> {
  const engine = (await import(pathToFileURL(resolve(file)).href)) as BaselineEngine;
  const loaded = await engine.TreeLibrary.loadFolder(join(repoRoot(), 'bench', 'trees'));
  if (!loaded.ok) fail(`--baseline: the baseline engine could not load bench/trees`);
  const baseTree = loaded.library.get(treeName);
  const list = world.observations.map((o, i) => {
    const a = new engine.Agent(baseTree, i);
    a.self = o;
    return a;
  });
  return { name: 'A', description: `baseline build (${file})`, agents: list, game: new BenchGame(durations), tick: agentTick, times: [] };
}

const variants: Variant[] = [
  values.baseline === undefined ? variant('A', 'pre-trace Agent.tick (copy in bench/lib/canopy.ts)', untracedTick, 0) : await baselineVariant(values.baseline),
  variant('B', 'Agent.tick, nobody watched', agentTick, 0),
  ...(watch > 0 ? [variant('C', `Agent.tick, ${watch} watched`, agentTick, watch)] : []),
];

function play(v: Variant, n: number): number {
  const { agents: list, game, tick } = v;
  const started = performance.now();
  game.now = n;
  game.deliver(list);
  const time = n * TICK_SECONDS;
  for (let i = 0; i < list.length; i++) tick(list[i]!, time, TICK_SECONDS, game);
  return performance.now() - started;
}

const machine = machineInfo();
console.log(`Canopy trace A/B: ${agents} agents, tree '${treeName}' (${tree.nodeCount} nodes), ${warmup} warm-up + ${ticks} timed ticks, interleaved`);
console.log(formatMachine(machine));
for (let n = 0; n < warmup + ticks; n++) {
  world.perturb();
  // Rotate the order every tick: no variant always runs first (cache, GC debt).
  for (let k = 0; k < variants.length; k++) {
    const v = variants[(n + k) % variants.length]!;
    const ms = play(v, n);
    if (n >= warmup) v.times.push(ms);
  }
}

const a = variants[0]!;
const median = (xs: number[]): number => xs.toSorted((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const total = (xs: number[]): number => xs.reduce((s, x) => s + x, 0);
console.log();
console.log(
  formatTable([
    ['variant', 'M agent-ticks/s (total)', 'median ms/tick', '÷ A (totals)', '÷ A (median of per-tick ratios)'],
    ...variants.map((v) => [
      `${v.name}: ${v.description}`,
      ((agents * ticks) / total(v.times) / 1000).toFixed(3),
      median(v.times).toFixed(3),
      (total(a.times) / total(v.times)).toFixed(3),
      median(v.times.map((t, i) => a.times[i]! / t)).toFixed(3),
    ]),
  ]),
);
const same = variants.every((v) => sameCounts(v.game.counts(), a.game.counts()));
console.log();
console.log(same ? `decisions: every variant issued the same actions (${JSON.stringify(a.game.counts())})` : 'WARNING: variants disagree on decisions');
if (!same) process.exitCode = 1;
console.log('÷ A: speed relative to A (1.000 = the same; below 1 = slower). The machine may be shared: read ratios, not absolutes.');

function int(name: string, text: string | undefined, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) fail(`--${name} must be an integer ≥ ${min}, not '${String(text)}'`);
  return n;
}

function fail(message: string): never {
  console.error(`bench trace-ab: ${message}`);
  process.exit(2);
}
