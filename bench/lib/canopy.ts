// Canopy under test: bench trees compiled once, one Agent per observation, and a tiny "game" that
// receives decisions and delivers action results N ticks later, as a game server would.

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, formatErrors, PluginError, Status, TreeLibrary, type CompiledTree, type DecisionSink } from '../../src/bt/index.js';
import { FLEE_TICKS, MOVE_TICKS, TICK_SECONDS, type DecisionCounts, type Implementation, type ImplementationName, type Population } from './population.js';
import type { World } from './world.js';

/** The bench/trees folder; found from the TypeScript sources (tests) and from dist/ alike. */
function benchTreesFolder(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`bench trees: no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return join(dir, 'bench', 'trees');
}

// Loaded when this module is imported: every bench tree validated and compiled once, as the service loads its trees folder.
const loaded = await TreeLibrary.loadFolder(benchTreesFolder());
if (!loaded.ok) throw new Error(`invalid bench tree:\n${formatErrors(loaded.errors)}`);
const library = loaded.library;

/** A compiled bench tree by name. */
export function benchTree(name: string): CompiledTree {
  const tree = library.get(name);
  if (tree === undefined) throw new Error(`no bench tree '${name}' in bench/trees`);
  return tree;
}

/** A growable list of (agent index, seq) pairs; typed, so playing the game allocates nothing once grown. */
interface Bucket {
  pairs: Int32Array;
  length: number;
}

function push(b: Bucket, agent: number, seq: number): void {
  if (b.length + 2 > b.pairs.length) {
    const grown = new Int32Array(b.pairs.length * 2);
    grown.set(b.pairs);
    b.pairs = grown;
  }
  b.pairs[b.length] = agent;
  b.pairs[b.length + 1] = seq;
  b.length += 2;
}

interface ActionKind {
  count: number;
  /** Ticks from issue to the result the game delivers; 0 for instant actions (no result). */
  readonly ticks: number;
}

/**
 * The game server's side: counts issued actions per name, and for actions that take time records
 * (agent, seq) in a ring of per-tick buckets and delivers `success` when their tick comes.
 * Cancelled actions are not removed: their late result is ignored by the agent, as the protocol says.
 */
export class BenchGame implements DecisionSink {
  private readonly kinds = new Map<string, ActionKind>();
  /** buckets[tick % length]: flat [agent index, seq, agent index, seq, ...] due at that tick. */
  private readonly buckets: Bucket[];
  /** The tick being played. */
  now = 0;
  cancels = 0;
  done = 0;

  constructor(durations: Readonly<Record<string, number>>) {
    for (const [name, ticks] of Object.entries(durations)) this.kinds.set(name, { count: 0, ticks });
    const longest = Math.max(0, ...Object.values(durations));
    this.buckets = Array.from({ length: longest + 1 }, () => ({ pairs: new Int32Array(1024), length: 0 }));
  }

  action(agent: Agent, seq: number, action: string): void {
    let kind = this.kinds.get(action);
    if (kind === undefined) this.kinds.set(action, (kind = { count: 0, ticks: 0 }));
    kind.count++;
    if (kind.ticks > 0) push(this.buckets[(this.now + kind.ticks) % this.buckets.length]!, agent.id as number, seq);
  }
  cancel(): void {
    this.cancels++;
  }
  finished(): void {
    this.done++;
  }
  error(agent: Agent, code: string, message: string): void {
    // A stopped agent would make the figures meaningless: stop the benchmark instead.
    throw new Error(`agent ${String(agent.id)} stopped: ${code} ${message}`);
  }
  log(): void {}

  /** Delivers the results due at tick `now` (call before ticking the agents). */
  deliver(agents: readonly Agent[]): void {
    const due = this.buckets[this.now % this.buckets.length]!;
    const pairs = due.pairs;
    for (let k = 0; k < due.length; k += 2) agents[pairs[k]!]!.deliverResult(pairs[k + 1]!, true);
    due.length = 0;
  }

  counts(): DecisionCounts {
    const out: DecisionCounts = {};
    for (const [name, kind] of this.kinds) out[name] = kind.count;
    return out;
  }
}

/** An agent's tick as it was before the inspector's trace existed (the A of the trace A/B): no `trace` check. */
export function untracedTick(a: Agent, time: number, dt: number, out: DecisionSink): void {
  if (a.stopped) return;
  a.time = time;
  a.dt = dt;
  a.out = out;
  try {
    const s = a.tree.root(a);
    if (s !== Status.RUNNING) out.finished(a, s === Status.SUCCESS ? 'success' : 'failure');
  } catch (err) {
    if (err instanceof PluginError) a.stop(out, 'E_PLUGIN', err.message);
    else a.stop(out, 'E_INTERNAL', `agent stopped: ${err instanceof Error ? err.message : String(err)}`);
  }
  a.out = NULL_SINK;
}

const NULL_SINK: DecisionSink = { action() {}, cancel() {}, finished() {}, error() {}, log() {} };

class CanopyPopulation implements Population {
  protected readonly agents: Agent[];
  protected readonly game: BenchGame;

  constructor(tree: CompiledTree, world: World, durations: Readonly<Record<string, number>>) {
    this.game = new BenchGame(durations);
    this.agents = world.observations.map((o, i) => {
      const a = new Agent(tree, i);
      a.self = o;
      return a;
    });
  }

  tick(tick: number): void {
    const { agents, game } = this;
    game.now = tick;
    game.deliver(agents);
    const time = tick * TICK_SECONDS;
    for (let i = 0; i < agents.length; i++) agents[i]!.tick(time, TICK_SECONDS, game);
  }

  counts(): DecisionCounts {
    return this.game.counts();
  }
}

/** The same population ticked through the pre-trace tick (untracedTick). */
class UntracedPopulation extends CanopyPopulation {
  override tick(tick: number): void {
    const { agents, game } = this;
    game.now = tick;
    game.deliver(agents);
    const time = tick * TICK_SECONDS;
    for (let i = 0; i < agents.length; i++) untracedTick(agents[i]!, time, TICK_SECONDS, game);
  }
}

function canopyImplementation(
  name: ImplementationName,
  treeName: string,
  durations: Readonly<Record<string, number>>,
  description: string,
  untraced = false,
): Implementation {
  const tree = benchTree(treeName);
  return {
    name,
    description: `${description} (${tree.nodeCount} nodes, ${tree.slotCount} slots)`,
    spawn: (world) => (untraced ? new UntracedPopulation(tree, world, durations) : new CanopyPopulation(tree, world, durations)),
  };
}

/** The guard tree ticked without the inspector's trace check in Agent.tick (A/B baseline). */
export function canopyGuardUntraced(): Implementation {
  return canopyImplementation('canopy-untraced', 'guard', { flee: FLEE_TICKS, moveToWaypoint: MOVE_TICKS }, 'Canopy, guard tree, pre-trace tick (A of the trace A/B)', true);
}

/** The large tree ticked without the inspector's trace check (A/B baseline). */
export function canopyLargeUntraced(): Implementation {
  return canopyImplementation('canopy-large-untraced', 'large', LARGE_TREE_DURATIONS, 'Canopy, large tree, pre-trace tick (A of the trace A/B)', true);
}

/** The guard tree (bench/trees/guard.json). */
export function canopyGuard(): Implementation {
  return canopyImplementation('canopy', 'guard', { flee: FLEE_TICKS, moveToWaypoint: MOVE_TICKS }, 'Canopy, guard tree');
}

/** Ticks from issue to result of the large tree's actions that take time (the others are instant). */
export const LARGE_TREE_DURATIONS: Readonly<Record<string, number>> = {
  flee: 3,
  aim: 2,
  takeCover: 2,
  reload: 4,
  heal: 3,
  moveToWaypoint: 5,
};

/** Ticks from issue to result of the shooter tree's actions that take time (the others are instant or end by `until`/`timeout`). */
export const SHOOTER_TREE_DURATIONS: Readonly<Record<string, number>> = {
  takeCover: 3,
  reload: 4,
  heal: 3,
  flee: 3,
  moveTo: 6,
  shoot: 2,
  aim: 2,
  strafe: 3,
  throwGrenade: 2,
  idleAnim: 5,
  checkRadio: 3,
  listen: 4,
};

/** The shooter NPC (bench/trees/shooter.yaml and its subtrees, ~200 nodes): a real game's tree size. */
export function canopyShooter(): Implementation {
  return canopyImplementation('canopy-shooter', 'shooter', SHOOTER_TREE_DURATIONS, 'Canopy, shooter tree (subtrees, services, parallel, reactive)');
}

/** The larger tree (bench/trees/large.json): guards with aborts, services, parallel, decorators, waits. */
export function canopyLarge(): Implementation {
  return canopyImplementation('canopy-large', 'large', LARGE_TREE_DURATIONS, 'Canopy, large tree');
}
