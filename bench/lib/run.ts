// Running a population: warm-up, timed ticks (world perturbation outside the timed part), memory per
// agent around spawning, and the decision counts used to check that implementations agree.

import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { canopyGuard, canopyGuardUntraced, canopyLarge, canopyLargeUntraced, canopyShooter } from './canopy.js';
import { behaviortreeGuard } from './behaviortree.js';
import { ceilingGuard, ceilingIoGuard } from './ceiling.js';
import { mistreevousGuard } from './mistreevous.js';
import type { DecisionCounts, Implementation, ImplementationName } from './population.js';
import { DEFAULT_SEED, World } from './world.js';

/** Every implementation, in the order the report lists them. */
export const IMPLEMENTATIONS: Readonly<Record<ImplementationName, () => Implementation>> = {
  canopy: canopyGuard,
  mistreevous: mistreevousGuard,
  behaviortree: behaviortreeGuard,
  ceiling: ceilingGuard,
  'ceiling-io': ceilingIoGuard,
  'canopy-large': canopyLarge,
  'canopy-shooter': canopyShooter,
  'canopy-untraced': canopyGuardUntraced,
  'canopy-large-untraced': canopyLargeUntraced,
};

/** The implementations of the guard tree, which must issue the same actions. */
export const GUARD_IMPLEMENTATIONS: readonly ImplementationName[] = ['canopy', 'canopy-untraced', 'mistreevous', 'behaviortree', 'ceiling', 'ceiling-io'];

export interface RunOptions {
  readonly agents: number;
  /** Timed ticks. */
  readonly ticks: number;
  /** Untimed ticks first, on the same agents (JIT warm-up). */
  readonly warmup: number;
  readonly seed?: number;
  /**
   * What the timed ticks are measured with: `wall` (default, hrtime) or `cpu`, the process's CPU time
   * (getrusage RUSAGE_SELF, exact to the µs): on a shared, loaded machine the time spent waiting for a core stays out.
   */
  readonly clock?: Clock;
}

export type Clock = 'wall' | 'cpu';

/**
 * Nanoseconds on `clock`'s scale (only differences mean anything). `cpu` is the whole process's CPU time
 * (V8's GC and compiler helper threads included: work the ticks cause), not process.threadCpuUsage: on
 * Linux the calling thread's own figure (getrusage RUSAGE_THREAD) only moves when the scheduler updates it,
 * every timer tick (4 ms at HZ=250), so a sum of 0.25–1 ms tick intervals was a sample count, not a
 * measurement, and the best of a few rounds picked lucky samples, most for the fastest implementation.
 * RUSAGE_SELF brings the running thread's time up to date first (exact to the µs).
 */
function now(clock: Clock): bigint {
  if (clock === 'wall') return process.hrtime.bigint();
  const u = process.cpuUsage();
  return BigInt(u.user + u.system) * 1000n;
}

export interface RunResult {
  readonly agentTicksPerSec: number;
  /** V8 heap growth per agent from spawning, after full GCs. */
  readonly heapBytesPerAgent: number;
  /** ArrayBuffer growth per agent (typed arrays above 64 bytes live outside the V8 heap). */
  readonly bufferBytesPerAgent: number;
  /** Resident set growth per agent: rough, but it sees what malloc adds per typed array (backing stores). */
  readonly rssBytesPerAgent: number;
  /** Actions issued over warm-up and timed ticks. */
  readonly counts: DecisionCounts;
}

/** Runs `ticks` ticks of the world and the population from tick `from`; returns the nanoseconds spent ticking agents. */
function play(world: World, population: { tick(t: number): void }, from: number, ticks: number, clock: Clock = 'wall'): bigint {
  let spent = 0n;
  for (let t = from; t < from + ticks; t++) {
    world.perturb();
    const start = now(clock);
    population.tick(t);
    spent += now(clock) - start;
  }
  return spent;
}

/** The actions issued by `impl` over `ticks` ticks (no timing): for equivalence checks. */
export function decisionCounts(impl: Implementation, agents: number, ticks: number, seed = DEFAULT_SEED): DecisionCounts {
  const world = new World(agents, seed);
  const population = impl.spawn(world);
  play(world, population, 0, ticks);
  return population.counts();
}

/** Spawns a population (memory measured around it), warms it up, then times `ticks` ticks. */
export function measure(impl: Implementation, options: RunOptions): RunResult {
  const world = new World(options.agents, options.seed ?? DEFAULT_SEED);
  collect();
  const before = process.memoryUsage();
  const population = impl.spawn(world);
  collect();
  const after = process.memoryUsage();
  // Keeps the population reachable until `after` is read, whatever the optimiser decides.
  if (population === null) throw new Error('unreachable');
  play(world, population, 0, options.warmup);
  const ns = play(world, population, options.warmup, options.ticks, options.clock);
  return {
    agentTicksPerSec: (options.agents * options.ticks) / (Number(ns) / 1e9),
    heapBytesPerAgent: (after.heapUsed - before.heapUsed) / options.agents,
    bufferBytesPerAgent: (after.arrayBuffers - before.arrayBuffers) / options.agents,
    rssBytesPerAgent: (after.rss - before.rss) / options.agents,
    counts: population.counts(),
  };
}

let gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc;

/** True when a real full GC is available (node --expose-gc, or the fallback below worked). */
export function gcAvailable(): boolean {
  if (gc === undefined) {
    try {
      // Without --expose-gc: turn the flag on at run time and fetch gc from a fresh context.
      v8.setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    } catch {
      gc = undefined;
    }
  }
  return gc !== undefined;
}

/** Full GCs until the heap stops shrinking (weak references and finalizers need more than one). */
function collect(): void {
  if (!gcAvailable()) return;
  let last = Infinity;
  for (let k = 0; k < 5; k++) {
    gc!();
    const used = process.memoryUsage().heapUsed;
    if (used >= last) break;
    last = used;
  }
}
