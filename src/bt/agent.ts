// One agent on one compiled tree: flat node state (statuses, slots), blackboard, RNG, and the tick.
// Everything structural lives in the shared CompiledTree; an agent owns only data, so it exports as plain data.

import type { ExprContext } from './expr/index.js';
import { types } from 'node:util';
import { isPlain } from './expr/runtime.js';
import type { CompiledTree } from './program.js';
import type { DecisionSink } from './decisions.js';
import { Status, STATUS_NAMES, type StatusName } from './status.js';
import { mulberry32Next, mulberry32Value, seedFor } from './rng.js';
import { Tracer } from './trace.js';

export type AgentId = number | string;

/** Options for a new agent (the protocol's spawn entry). */
export interface AgentOptions {
  /** A path such as "Blue Team/Warriors/Foo"; the debugger groups by "/". */
  readonly label?: string;
  /** Seeds the agent's random generator; default: a hash of the id. */
  readonly seed?: number;
  /** Initial blackboard values (declared keys only: check against CompiledTree.blackboardKeys first). */
  readonly bb?: Readonly<Record<string, unknown>>;
}

/** An error thrown by plugin code; the agent is stopped with E_PLUGIN. */
export class PluginError extends Error {
  readonly node: string;
  constructor(node: string, cause: unknown) {
    super(`plugin code at ${node} threw: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'PluginError';
    this.node = node;
  }
}

/** An agent's whole state as plain data (JSON- and structured-clone-safe). Restore with Agent.restore. */
export interface AgentState {
  readonly v: 1;
  readonly tree: string;
  /** Fingerprint of the compiled tree; restore refuses a state made on another version of the tree. */
  readonly treeHash: string;
  readonly id: AgentId;
  readonly label: string;
  readonly status: number[];
  readonly slots: number[];
  readonly bb: Record<string, unknown>;
  readonly self: unknown;
  readonly rng: number;
  readonly seq: number;
  readonly time: number;
  readonly dt: number;
  readonly stopped: boolean;
}

/** A read-only view of an agent for tools and the debugger, built only when asked for. */
export interface AgentInspection {
  readonly id: AgentId;
  readonly label: string;
  readonly tree: string;
  readonly seq: number;
  readonly time: number;
  readonly stopped: boolean;
  readonly nodes: ReadonlyArray<{ readonly index: number; readonly type: string; readonly name: string | null; readonly path: string; readonly status: StatusName }>;
  /** Node numbers of the running nodes, root first. */
  readonly activePath: readonly number[];
  readonly blackboard: Readonly<Record<string, unknown>>;
  /** Actions the tree is waiting on. */
  readonly actions: ReadonlyArray<{ readonly seq: number; readonly node: number; readonly action: string }>;
}

/**
 * An agent: create one per NPC, tick it with `tick()`. Not thread-safe; the service keeps each agent
 * in exactly one worker. All agents share the hidden class, so compiled expressions stay monomorphic.
 */
export class Agent implements ExprContext {
  readonly id: AgentId;
  readonly label: string;
  readonly tree: CompiledTree;
  /** Last status of every node, indexed by node number (Status codes). */
  readonly status: Uint8Array;
  /** Numeric node state (cursors, counters, timers, seqs), laid out by the compiler. */
  readonly slots: Float64Array;
  /** The blackboard: declared keys only. */
  bb: Record<string, unknown>;
  /**
   * `self` when it is an array or a plain object (what JSON and MessagePack decoding produce), else an empty
   * object: checked once when `self` is set, so that compiled `self.key` reads need only the own-property test.
   * Undefined for a Proxy (whose reads may answer what its own-property test denies): reads then check in full.
   */
  plainSelf: object | undefined = NO_FIELDS;
  /** `world` when it is an array or a plain object, else an empty object (see plainSelf). */
  plainWorld: object | undefined = NO_FIELDS;
  private observation: unknown = null;
  private worldState: unknown = null;
  /** Last action seq issued (the next is seq + 1). */
  seq = 0;
  /** True once an error stopped the agent: it never ticks again. */
  stopped = false;
  /**
   * Where the current tick's decisions go: set by tick() (and halt), valid only during it. Between ticks it still names
   * the last tick's sink, which nothing writes to then: storing the same sink into every agent twice a tick (and a
   * null sink back) was 2–3 % of the engine's guard-tree tick (a write barrier each). A watched agent's recording
   * sink is cleared after each tick.
   */
  out: DecisionSink = NULL_SINK;
  /** The recorder while the agent is watched (see `watch`); null otherwise: then ticks record nothing. */
  trace: Tracer | null = null;
  /**
   * The agent's time, dt and random generator state: three float64s in a chunk shared with other agents, at
   * `clock`, `clock + 1`, `clock + 2`. As fields of their own, doubles (tree time) and uint32s (seeds) would each
   * be boxed in a heap number of their own per agent: 48 bytes and three objects more per agent for the GC.
   * The numeric slots lie right before it: `slots` is `clockChunk` from `clock - tree.slotCount`. Read-only to
   * everyone else (a checkpoint copies an agent's numbers from here).
   */
  readonly clockChunk: Float64Array;
  readonly clock: number;
  /**
   * The buffer `status` is a view of, and where in it the view starts: deliverResult reads statuses (and slots,
   * which lie before `clock` in clockChunk) through the shared chunks, not this agent's own view objects, so a
   * result touches the agent and its state's bytes but not two more objects (each a cache miss on a busy tick).
   * A checkpoint reads them so too. Read-only to everyone else.
   */
  readonly statusChunk: Uint8Array;
  readonly statusAt: number;

  constructor(tree: CompiledTree, id: AgentId, options: AgentOptions = {}) {
    this.id = id;
    this.label = options.label ?? '';
    this.tree = tree;
    // Views into shared chunks: one ArrayBuffer per AGENTS_PER_CHUNK agents instead of one per agent.
    this.status = takeStatus(tree.nodeCount);
    this.statusChunk = statusChunk;
    this.statusAt = this.status.byteOffset;
    this.slots = takeSlots(tree.slotCount);
    this.clockChunk = slotChunk;
    this.clock = takeClock();
    this.bb = tree.newBlackboard();
    if (options.bb !== undefined) Object.assign(this.bb, structuredClone(options.bb));
    this.clockChunk[this.clock + 2] = seedFor(id, options.seed);
  }

  /** Tree time of the current (or last) tick, seconds. */
  get time(): number {
    return this.clockChunk[this.clock]!;
  }
  set time(value: number) {
    this.clockChunk[this.clock] = value;
  }

  /** Seconds since the previous tick. */
  get dt(): number {
    return this.clockChunk[this.clock + 1]!;
  }
  set dt(value: number) {
    this.clockChunk[this.clock + 1] = value;
  }

  private get rngState(): number {
    return this.clockChunk[this.clock + 2]!;
  }
  private set rngState(value: number) {
    this.clockChunk[this.clock + 2] = value;
  }

  /** This agent's latest observation (`self` in expressions). */
  get self(): unknown {
    return this.observation;
  }
  set self(value: unknown) {
    this.observation = value;
    this.plainSelf = readable(value);
  }

  /**
   * Sets `self` to a plain object its caller made itself (with `{}`: never a Proxy, no other prototype): the setter
   * without its check, for a host that swaps each agent's observation object every tick.
   */
  setPlainSelf(value: Record<string, unknown>): void {
    this.observation = value;
    this.plainSelf = value;
  }

  /** The session's shared world state (`world` in expressions); set by whoever ticks the agent. */
  get world(): unknown {
    return this.worldState;
  }
  set world(value: unknown) {
    this.worldState = value;
    // A session's world is handed to each of its agents in turn: checked once for all of them.
    if (value !== checkedWorld) {
      checkedWorld = value;
      checkedPlainWorld = readable(value);
    }
    this.plainWorld = checkedPlainWorld;
  }

  /**
   * `agent` root of expressions (`agent.id`, `agent.label`): the agent itself, read-only through this type, rather
   * than an object of its own per agent (40 bytes each; the checker admits only those two fields).
   */
  get agent(): { readonly id: AgentId; readonly label: string } {
    return this;
  }

  /** The generator's state (exportState's `rng`): packed checkpoints copy an agent's state field by field. */
  randomState(): number {
    return this.rngState;
  }

  /** The agent's seeded generator, in [0, 1). */
  random(): number {
    this.rngState = mulberry32Next(this.rngState);
    return mulberry32Value(this.rngState);
  }

  /**
   * Ticks the tree once at tree time `time`. Decisions go to `out`. If the root finishes, `out.finished`
   * is called and the next tick starts again at the root. An exception from plugin code stops this
   * agent (E_PLUGIN; any other exception E_INTERNAL), cancels its running actions, and never throws.
   */
  tick(time: number, dt: number, out: DecisionSink): void {
    if (this.stopped) return;
    this.time = time;
    this.dt = dt;
    // A watched agent ticks through the traced program and its decisions through the recorder; the
    // unwatched hot path pays one null check.
    const trace = this.trace;
    if (trace !== null) out = trace.begin(this, out);
    // Most ticks the agent already has this sink (its host's, tick after tick): see `out`.
    if (this.out !== out) this.out = out;
    try {
      const s = trace === null ? this.tree.root(this) : trace.program.root(this);
      if (s !== Status.RUNNING) out.finished(this, s === Status.SUCCESS ? 'success' : 'failure');
    } catch (err) {
      if (err instanceof PluginError) this.stop(out, 'E_PLUGIN', err.message);
      else this.stop(out, 'E_INTERNAL', `agent stopped: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (trace !== null) {
      this.out = NULL_SINK;
      trace.end(this);
    }
  }

  /**
   * Starts recording a frame per tick in a ring buffer of `ticks` frames (watching again resizes it and
   * keeps the frames). Only this agent pays: it ticks through its tree's traced variant from now on.
   */
  watch(ticks: number): Tracer {
    if (this.trace === null) this.trace = new Tracer(this, ticks);
    else this.trace.resize(ticks);
    return this.trace;
  }

  /** Stops recording and drops the frames. */
  unwatch(): void {
    this.trace = null;
  }

  /**
   * Delivers a game server's result for action `seq`. Returns false (and changes nothing) when no
   * action with that seq is running. The waiting action returns the status on its next tick.
   */
  deliverResult(seq: number, success: boolean): boolean {
    const t = this.tree;
    const status = this.statusChunk;
    const at = this.statusAt;
    const slots = this.clockChunk;
    const base = this.clock - t.slotCount;
    for (let k = 0; k < t.actionNodes.length; k++) {
      const node = t.actionNodes[k]!;
      if (status[at + node] === Status.RUNNING && slots[base + t.actionSeqSlots[k]!] === seq) {
        // The first result for a seq counts; a duplicate is ignored like any stale result.
        const result = base + t.actionResultSlots[k]!;
        if (slots[result] !== 0) return false;
        slots[result] = success ? Status.SUCCESS : Status.FAILURE;
        if (this.trace !== null) this.trace.result(seq, success);
        return true;
      }
    }
    return false;
  }

  /** Writes blackboard values; returns the first undeclared key (and writes nothing) if any. */
  setBlackboard(values: Readonly<Record<string, unknown>>): string | null {
    for (const key of Object.keys(values)) if (!this.tree.blackboardKeys.has(key)) return key;
    for (const key of Object.keys(values)) this.bb[key] = values[key];
    return null;
  }

  /** Halts the whole tree (despawn): running actions are cancelled into `out`. */
  halt(out: DecisionSink): void {
    this.out = out;
    try {
      this.tree.halt(this, 0);
    } catch {
      // A plugin's onHalt threw while the agent is going away: cancel what is left by hand.
      this.cancelRunningActions(out);
    }
    this.out = NULL_SINK;
  }

  /**
   * This agent restarted on `tree` (a reloaded version of its tree; halt this agent first): a new agent at the
   * root with the same id, label, action seq, random generator, observation and time. Blackboard keys `tree`
   * declares keep their values (moved, not copied: this agent is discarded); new keys get their initial values.
   */
  restartOn(tree: CompiledTree): Agent {
    const a = new Agent(tree, this.id, { label: this.label });
    for (const key of Object.keys(this.bb)) if (tree.blackboardKeys.has(key)) a.bb[key] = this.bb[key];
    a.self = this.self;
    a.world = this.world;
    a.rngState = this.rngState;
    a.seq = this.seq;
    a.time = this.time;
    a.dt = this.dt;
    return a;
  }

  /** Stops the agent for good after an error: cancels running actions, reports `code`. */
  stop(out: DecisionSink, code: string, message: string): void {
    this.cancelRunningActions(out);
    this.status.fill(Status.IDLE);
    this.stopped = true;
    out.error(this, code, message);
  }

  private cancelRunningActions(out: DecisionSink): void {
    const t = this.tree;
    for (let k = 0; k < t.actionNodes.length; k++) {
      const node = t.actionNodes[k]!;
      if (this.status[node] === Status.RUNNING) {
        if (this.slots[t.actionResultSlots[k]!] === 0) out.cancel(this, this.slots[t.actionSeqSlots[k]!]!);
        this.status[node] = Status.HALTED;
      }
    }
  }

  /** The agent's state for tools; costs nothing unless called. */
  inspect(): AgentInspection {
    const t = this.tree;
    const activePath: number[] = [];
    for (let i = 0; i < t.nodeCount; i++) if (this.status[i] === Status.RUNNING) activePath.push(i);
    const actions: Array<{ seq: number; node: number; action: string }> = [];
    for (let k = 0; k < t.actionNodes.length; k++) {
      const node = t.actionNodes[k]!;
      if (this.status[node] === Status.RUNNING) {
        actions.push({ seq: this.slots[t.actionSeqSlots[k]!]!, node, action: t.nodes[node]!.action ?? '' });
      }
    }
    return {
      id: this.id,
      label: this.label,
      tree: t.name,
      seq: this.seq,
      time: this.time,
      stopped: this.stopped,
      nodes: t.nodes.map((n, index) => ({ index, type: n.type, name: n.name, path: n.path, status: STATUS_NAMES[this.status[index]!] ?? 'idle' })),
      activePath,
      blackboard: structuredClone(this.bb),
      actions,
    };
  }

  /** The whole state as plain data; `Agent.restore` continues exactly where this agent is. */
  exportState(): AgentState {
    return {
      v: 1,
      tree: this.tree.name,
      treeHash: this.tree.hash,
      id: this.id,
      label: this.label,
      status: Array.from(this.status),
      slots: Array.from(this.slots),
      bb: structuredClone(this.bb),
      self: structuredClone(this.self),
      rng: this.rngState,
      seq: this.seq,
      time: this.time,
      dt: this.dt,
      stopped: this.stopped,
    };
  }

  /** Rebuilds an agent from `exportState()` output. Throws if the state was made on another tree version. */
  static restore(tree: CompiledTree, state: AgentState): Agent {
    if (state.v !== 1) throw new Error(`unsupported agent state version ${String(state.v)}`);
    if (state.tree !== tree.name || state.treeHash !== tree.hash) {
      throw new Error(`agent state was made on tree '${state.tree}' (${state.treeHash}), not '${tree.name}' (${tree.hash})`);
    }
    if (state.status.length !== tree.nodeCount || state.slots.length !== tree.slotCount) throw new Error('agent state does not match the tree layout');
    const a = new Agent(tree, state.id, { label: state.label });
    a.status.set(state.status);
    a.slots.set(state.slots);
    a.bb = Object.assign(tree.newBlackboard(), structuredClone(state.bb));
    a.self = structuredClone(state.self);
    a.rngState = state.rng;
    a.seq = state.seq;
    a.time = state.time;
    a.dt = state.dt;
    a.stopped = state.stopped;
    return a;
  }
}

/** What plainSelf and plainWorld hold when the value is not an array or plain object: no own property at all. */
const NO_FIELDS: object = Object.freeze(Object.create(null) as object);

/**
 * `value` when expressions may read its own properties (an array or plain object, the runtime's isPlain), else
 * NO_FIELDS; undefined for a Proxy, so that compiled reads of it take the full path (the prototype check and
 * hasOwn on every read, as on a context without plainSelf) rather than the fast path's single load. Checked when the value is handed to the agent; a host that later swaps the prototype of an object
 * it handed over is not protected against (observations are decoded data, never touched again).
 */
const isProxy = types.isProxy;

/** The world value last checked by readable() in the world setter, and what it gave. */
let checkedWorld: unknown = null;
let checkedPlainWorld: object | undefined = NO_FIELDS;

function readable(value: unknown): object | undefined {
  if (typeof value !== 'object' || value === null) return NO_FIELDS;
  if (isProxy(value)) return undefined;
  return isPlain(value) ? value : NO_FIELDS;
}

const AGENTS_PER_CHUNK = 256;
let statusChunk = new Uint8Array(0);
let statusUsed = 0;
let slotChunk = new Float64Array(0);
let slotUsed = 0;
function takeStatus(n: number): Uint8Array {
  if (statusUsed + n > statusChunk.length) {
    statusChunk = new Uint8Array(Math.max(n, 8) * AGENTS_PER_CHUNK);
    statusUsed = 0;
  }
  // A view made by the constructor: about a third cheaper than subarray (no species lookup) at every spawn.
  const v = new Uint8Array(statusChunk.buffer, statusUsed, n);
  statusUsed += (n + 7) & ~7;
  return v;
}
/** The clock's three float64s follow the agent's slots in the same chunk (takeSlots reserved them). */
const CLOCK = 3;
function takeSlots(n: number): Float64Array {
  if (slotUsed + n + CLOCK > slotChunk.length) {
    slotChunk = new Float64Array((n + CLOCK) * AGENTS_PER_CHUNK);
    slotUsed = 0;
  }
  const v = new Float64Array(slotChunk.buffer, slotUsed * Float64Array.BYTES_PER_ELEMENT, n);
  slotUsed += n;
  return v;
}
/** The agent's clock, right after the slots takeSlots just gave out (in `slotChunk`). */
function takeClock(): number {
  const at = slotUsed;
  slotUsed += CLOCK;
  return at;
}

const NULL_SINK: DecisionSink = {
  action() {},
  cancel() {},
  finished() {},
  error() {},
  log() {},
};
