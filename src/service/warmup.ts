// The start-up warm-up: a fresh process runs its first spawns and ticks in cold code (V8 optimizes a function only
// after it has run a while), several times slower than later ones — measured on a 10,000-agent spawn: decoding
// 38 vs 5 ms, routing 31 vs 3.5 ms, creating the agents on a worker 56 vs 3–9 ms. The game servers that connect
// first would pay for it, all at once, in their first seconds. So before the service says it is ready, it runs the
// same code on agents of its own: spawn frames decoded and routed, agents created on every worker, snapshot
// frames read by the fast path and routed, ticks (only when no plugin is loaded: built-in nodes have no effect
// outside the agent), a despawn, then the session is dropped. No game server sees any of it. The ticks play a small
// game (WarmGame) with the fields the trees read, so that the trees' branches run here rather than in a game's first
// seconds, where each branch run for the first time threw the tree's optimized code away.

import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { WebSocket, type RawData } from 'ws';
import { PROTOCOL_VERSION, decode, encode, encodeDecisions, parseClientFrame, parseSnapshotHead, type AgentId, type PackedRows } from '../protocol/index.js';
import { frameFields, type AgentPool, type SpawnEntry } from './pool/index.js';

/** Observation fields of the warm-up when the trees read none of `self`'s: the value kinds of the fast path (number, boolean, null, [x, y]). */
const FIELDS = ['warmA', 'warmB', 'warmC', 'warmD'];
/** Ticks of the pool warm-up's first round (without plugins): enough for its game to run the trees' branches (WarmGame). */
export const WARMUP_TICKS = 60;
/** Ticks of its later rounds, and of each round of the session layer's warm-up (ws frames, results read on the main thread). */
export const LATER_TICKS = 5;
/**
 * The session layer's long play (warmUpSession's tail): V8 optimizes a function once it has run some hundreds of times
 * (Maglev, Node 26: about 500 calls), and the code a lockstep message runs once — the frame's head, the route, the
 * stage, the reply, the merge, the decisions' frame, on the main thread and on the workers — had run only the rounds'
 * few ticks, so the first game servers' first seconds ran it unoptimized (docs/capacity.md, *Round twenty-three*).
 * TAIL_AGENTS rows a frame: as many as a frame needs to be staged on its worker, the path a game server's take.
 */
export const TAIL_TICKS = 600;
export const TAIL_AGENTS = 256;
/** The warm-up's fields when none are given: FIELDS, nothing of the world. */
const NO_FIELDS_READ: WarmupFields = { self: FIELDS, world: [] };
/** At most this many of the fields the trees read are given values (a row of hundreds of fields would only slow the warm-up). */
const MAX_FIELDS = 32;

/** What the warm-up's game gives values to: observation fields, and fields of the world state. */
export interface WarmupFields {
  readonly self: readonly string[];
  readonly world: readonly string[];
}

/**
 * The warm-up's fields: the `self` and `world` fields the trees read (TreeReads), so that their conditions go both ways
 * and their branches run; FIELDS for `self` when they read none.
 */
export function warmupFields(reads: ReadonlyArray<{ readonly self: readonly string[]; readonly world: readonly string[] }>): WarmupFields {
  const self = [...new Set(reads.flatMap((r) => r.self))].filter((f) => f !== TAG).slice(0, MAX_FIELDS);
  const world = [...new Set(reads.flatMap((r) => r.world))].slice(0, MAX_FIELDS);
  // TAG first: the warm-up's observation objects then never share a hidden class with a game's that declares the same
  // fields in the same order, whose field representations the warm-up's mixed kinds of values would generalize.
  return { self: self.length > 0 ? [TAG, ...self] : FIELDS, world };
}

/** The warm-up's own first observation field (no tree reads it). */
const TAG = 'canopyWarmup';

/** A small integer hash (xorshift-multiply): the warm-up's values are varied but the same from run to run. */
function mix(x: number): number {
  let h = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Numbers a game's fields hold: zero, small and large, negative, fractional (thresholds in trees fall between them). */
const NUMBERS = [0, 1, 2, 3, 4, 5, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 75, 90, 100, 150, -1, -10, 0.5, 2.5, 7.5];
/** Coordinates of points: near each other, so that distances fall on both sides of a tree's ranges. */
const COORDINATES = [0, 0.5, 1, 2, 3, 5, 8, 12, 20];
/** Seconds between the warm-up's ticks, cycled: mostly a 20 Hz step, sometimes long ones, so waits, cooldowns and timeouts end. */
const STEPS = [0.05, 0.05, 0.05, 0.5, 0.05, 2];

/**
 * The warm-up's game: a value per agent and field that changes every few ticks (each agent gives each field one kind:
 * mostly numbers, some booleans, [x, y] pairs and nulls), and a result for most actions a tick or three after they
 * were issued (success or failure). A tree's code is optimized with what its first ticks ran; a branch that had never
 * run stops the optimized code when it first does, and the tree is compiled again: in the first seconds of the load
 * generator's game, about thirty compilations of the tree a worker (docs/capacity.md, *Round fifteen*). With the
 * branches run here, that happens before the service says it is ready.
 */
export class WarmGame {
  private readonly due = new Map<number, Array<[AgentId, number, 'success' | 'failure']>>();
  time = 0;
  /** Names of the actions the trees issued, results sent, agents stopped with an error: what the warm-up ran. */
  readonly actions = new Set<string>();
  results = 0;
  stopped = 0;

  constructor(
    private readonly fields: WarmupFields,
    private readonly ids: readonly AgentId[],
  ) {}

  /** The snapshot of tick `t` (from 1): rows of every agent, the results due, and the tick's time. */
  snapshot(t: number): Record<string, unknown> {
    const dt = STEPS[t % STEPS.length]!;
    this.time += dt;
    const phase = Math.floor(t / 3);
    const self = this.fields.self;
    const rows = this.ids.map((id, i) => {
      const row: unknown[] = [id];
      for (let k = 0; k < self.length; k++) row.push(value(mix(i * 64 + k), mix((i * 64 + k) * 977 + phase)));
      return row;
    });
    const results = this.due.get(t) ?? [];
    this.due.delete(t);
    this.results += results.length;
    // The world's fields change kind from phase to phase (it is one value for all agents): lists of points among them.
    const world = this.fields.world.length === 0 ? null : Object.fromEntries(this.fields.world.map((f, k) => [f, worldValue(phase + k, mix(k * 7919 + phase))]));
    // The rows last, as game servers send them: the fast path (rows the main thread does not read) needs that.
    return { t: 'snapshot', tick: t, time: this.time, ...(world !== null ? { world } : {}), ...(results.length > 0 ? { results } : {}), agents: rows };
  }

  /** The seconds tick `t` advanced time by (after snapshot(t)). */
  dt(t: number): number {
    return STEPS[t % STEPS.length]!;
  }

  /** Takes tick `t`'s decisions (a decoded `decisions` frame): most actions get a result a tick or three later. */
  decided(t: number, frame: Record<string, unknown>): void {
    const errors = frame['errors'];
    if (Array.isArray(errors)) this.stopped += errors.length;
    const actions = frame['actions'];
    if (!Array.isArray(actions)) return;
    for (const a of actions as unknown[]) {
      if (!Array.isArray(a)) continue;
      const [id, seq, name] = a as [AgentId, number, string];
      this.actions.add(name);
      const h = mix(seq * 131 + t);
      if (h % 8 === 0) continue; // some never answered: timeouts and aborts cancel them
      const when = t + 1 + (h % 3);
      let list = this.due.get(when);
      if (list === undefined) this.due.set(when, (list = []));
      list.push([id, seq, (h >>> 3) % 4 === 0 ? 'failure' : 'success']);
    }
  }
}

/** Kinds for value(): a number, a point, null. */
const NUMBER = 0;
const POINT = 17;
const NULL = 19;

/** A world field's value, its kind taken in turn (a point, a list of points, a number, null), the value by `which`. */
function worldValue(turn: number, which: number): unknown {
  const k = turn % 4;
  if (k === 1) return Array.from({ length: 1 + (which % 5) }, (_, j) => value(POINT, mix(which + j)));
  return value(k === 0 ? POINT : k === 2 ? NUMBER : NULL, which);
}

/** An agent's value of a field: its kind fixed by `kind` (mostly numbers), the value by `which`. */
function value(kind: number, which: number): unknown {
  const k = kind % 20;
  if (k < 11) return NUMBERS[which % NUMBERS.length]!;
  if (k < 14) return (which & 1) === 0;
  if (k < 19) return [COORDINATES[which % COORDINATES.length]!, COORDINATES[(which >>> 8) % COORDINATES.length]!];
  return null;
}

/** What a warm-up did: how long it took, the agents it spawned and freed, the ticks it ran, why it stopped early. */
export interface WarmupResult {
  readonly ms: number;
  readonly agents: number;
  readonly ticks: number;
  /** The pool's warm-up: workers that held its agents (0 inline). */
  readonly workers?: number;
  /** Names of the actions its agents issued (sorted), results it sent them, agents stopped with an error (WarmGame). */
  readonly actions?: readonly string[];
  readonly results?: number;
  readonly stopped?: number;
  readonly error?: string;
}

/**
 * Agents whose snapshot fits in `maxFrameBytes`: a row's id and values at most 20 bytes each (a point is 19), and room
 * for its results (up to three an agent, 25 bytes each).
 */
function rowsPerFrame(maxFrameBytes: number, fields: WarmupFields): number {
  return Math.max(1, Math.floor(maxFrameBytes / (96 + 20 * fields.self.length)));
}

/** What the warm-up games ran, for WarmupResult. */
function played(games: readonly WarmGame[]): { actions: string[]; results: number; stopped: number } {
  const actions = new Set<string>();
  let results = 0;
  let stopped = 0;
  for (const g of games) {
    for (const a of g.actions) actions.add(a);
    results += g.results;
    stopped += g.stopped;
  }
  return { actions: [...actions].toSorted(), results, stopped };
}

export interface WarmupOptions {
  /** Agents per round (0: no warm-up). */
  readonly agents: number;
  /** Rounds: each spawns, ticks and despawns `agents` agents. */
  readonly rounds: number;
  /**
   * Ticks of the first round, long enough for the game to run the trees' branches (WarmGame); later rounds, which
   * warm spawning and freeing again, tick at most LATER_TICKS times. 0 to only spawn and despawn (trees with plugin
   * code are never ticked here).
   */
  readonly ticks: number;
  readonly maxFrameBytes: number;
  /** What the game gives values to (warmupFields); default FIELDS for `self`, nothing of the world. */
  readonly fields?: WarmupFields;
}

/**
 * Runs the warm-up on `pool` with agents on `trees` (cycled); resolves with what it did. Never throws. Each round has
 * one session per worker, ticked together: a session's agents stay on one worker (PoolOptions.sessionAffinity), and
 * every worker's code must be warm.
 */
export async function warmUp(pool: AgentPool, trees: readonly string[], o: WarmupOptions): Promise<WarmupResult> {
  const started = performance.now();
  let ticks = 0;
  let workers = 0;
  if (o.agents <= 0 || o.rounds <= 0 || trees.length === 0) return { ms: 0, agents: 0, ticks: 0, workers: 0 };
  const fields = o.fields ?? NO_FIELDS_READ;
  const options = { fieldCount: fields.self.length, mode: 'lockstep', packRows: true } as const;
  const parse = (msg: Record<string, unknown>) => parseClientFrame(encode(msg), o.maxFrameBytes, options);
  const count = Math.max(1, Math.min(pool.workerCount, o.agents));
  // Each session's snapshot within the frame limit, whatever the number of fields.
  const agents = Math.min(o.agents, count * rowsPerFrame(o.maxFrameBytes, fields));
  const games: WarmGame[] = [];
  for (let round = 0; round < o.rounds; round++) {
    const sessions: Array<{ name: string; ids: AgentId[]; game: WarmGame }> = [];
    try {
      for (let k = 0; k < count; k++) {
        const name = `warmup-${randomUUID()}`;
        pool.createSession(name, { fields: fields.self, maxAgents: agents });
        // Dense, sparse and string ids, so each path of the id handling is warm.
        const from = Math.floor((k * agents) / count);
        const ids: AgentId[] = Array.from({ length: Math.floor(((k + 1) * agents) / count) - from }, (_, j) => {
          const i = from + j;
          return i % 3 === 0 ? i : i % 3 === 1 ? 1_000_000 + i : `warm-${i}`;
        });
        const game = new WarmGame(fields, ids);
        games.push(game);
        sessions.push({ name, ids, game });
        const spawn = parse({ t: 'spawn', id: 1, agents: ids.map((id, i) => ({ id, tree: trees[(from + i) % trees.length]!, seed: from + i })) });
        if (!spawn.ok || spawn.msg.t !== 'spawn') throw new Error(`warm-up spawn frame refused: ${spawn.ok ? spawn.msg.t : spawn.message}`);
        const entries: SpawnEntry[] = spawn.msg.agents.map((a) => ({ id: a.id, tree: a.tree, ...(a.seed !== undefined ? { seed: a.seed } : {}) }));
        pool.spawn(name, entries);
      }
      workers = Math.max(workers, pool.workerStats().filter((w) => w.agents > 0).length);
      const roundTicks = round === 0 ? o.ticks : Math.min(o.ticks, LATER_TICKS);
      for (let t = 1; t <= roundTicks; t++) {
        await Promise.all(
          sessions.map(async ({ name, game }) => {
            const bytes = encode(game.snapshot(t));
            // As the service reads a lockstep frame (ws.ts): applied and ticked in one message where the pool can, so
            // that the code games run is the code warmed; else read here.
            const unread = parseSnapshotHead(bytes, o.maxFrameBytes, options);
            const folded = unread === undefined ? null : pool.tickFrame(name, t, game.time, game.dt(t), t, { bytes, start: unread.start, count: unread.count, width: fields.self.length, world: unread.parsed.msg.world, results: unread.parsed.msg.results });
            let d = folded === null ? null : ((await folded)?.decisions ?? null);
            if (d === null) {
              const snapshot = parseClientFrame(bytes, o.maxFrameBytes, options);
              if (!snapshot.ok || snapshot.msg.t !== 'snapshot') throw new Error(`warm-up snapshot frame refused: ${snapshot.ok ? snapshot.msg.t : snapshot.message}`);
              pool.observe(name, snapshot.msg.agents as PackedRows, false);
              if (snapshot.msg.results !== undefined) pool.results(name, snapshot.msg.results);
              if (snapshot.msg.world !== undefined) pool.setWorld(name, snapshot.msg.world);
              d = await pool.tick(name, t, game.time, game.dt(t), t);
            }
            game.decided(t, decode(encodeDecisions(frameFields(d, t, t))) as Record<string, unknown>);
          }),
        );
        ticks++;
      }
      for (const { name, ids } of sessions) {
        const despawn = parse({ t: 'despawn', id: 2, ids });
        if (despawn.ok && despawn.msg.t === 'despawn') pool.despawn(name, despawn.msg.ids);
      }
    } catch (err) {
      return { ms: performance.now() - started, agents: agents * round, ticks, workers, ...played(games), error: err instanceof Error ? err.message : String(err) };
    } finally {
      // A pool closed meanwhile (a shutdown during start-up) has nothing left to free.
      for (const { name } of sessions) {
        try {
          pool.destroySession(name);
        } catch {
          // closed
        }
      }
    }
  }
  return { ms: performance.now() - started, agents: agents * o.rounds, ticks, workers, ...played(games) };
}

export interface SessionWarmupOptions {
  /** ws:// URL of the service's own /v1/ws (loopback). */
  readonly url: string;
  /** Upgrade request headers: the warm-up secret (ws.ts) and an API key when keys are configured. */
  readonly headers: Record<string, string>;
  readonly trees: readonly string[];
  /** Agents per round, spawned in one message (more than ws.ts spawns per turn of the event loop). */
  readonly agents: number;
  readonly rounds: number;
  /** Lockstep ticks per round; 0 to only spawn and despawn (plugin code is never ticked here). */
  readonly ticks: number;
  /**
   * After the rounds, `tailSessions` more plays at once with `tailAgents` agents and `tailTicks` ticks each (when
   * `ticks` > 0; default none): TAIL_AGENTS and TAIL_TICKS in the service.
   */
  readonly tailAgents?: number;
  readonly tailTicks?: number;
  /** Game servers playing the tail at once (default 1): the pool's workers, so that each runs it. */
  readonly tailSessions?: number;
  readonly maxFrameBytes: number;
  /** What the game gives values to (warmupFields); default FIELDS for `self`, nothing of the world. */
  readonly fields?: WarmupFields;
  /** The whole warm-up gives up after this long (default 30 s). */
  readonly timeoutMs?: number;
}

/**
 * The connection and session layer's warm-up: what a game server does, through a real WebSocket to the service
 * itself — hello, a spawn of `agents` agents with a snapshot right behind it (queued behind the spawn's parts),
 * lockstep ticks, a despawn, bye — `rounds` times, then the long plays (`tailSessions` game servers at once, each
 * `tailTicks` ticks of `tailAgents` agents). It warms what the pool's warm-up cannot reach: ws frames in and out,
 * the connection's queue and parts (ws.ts), the session's spawn, lockstep and replies. Resolves with what it did;
 * never throws.
 */
export async function warmUpSession(o: SessionWarmupOptions): Promise<WarmupResult> {
  const started = performance.now();
  // Spawn frames are the larger ones: about 40 bytes an agent with these ids and tree names.
  const fields = o.fields ?? NO_FIELDS_READ;
  const fit = Math.min(Math.floor(o.maxFrameBytes / 64), rowsPerFrame(o.maxFrameBytes, fields));
  const agents = Math.min(Math.floor(o.agents), fit);
  if (agents <= 0 || o.rounds <= 0 || o.trees.length === 0) return { ms: 0, agents: 0, ticks: 0 };
  const deadline = started + (o.timeoutMs ?? 30_000);
  let ticks = 0;
  let done = 0;
  const games: WarmGame[] = [];
  const play = async (count: number, playTicks: number): Promise<void> => {
    const socket = await LoopbackSocket.open(o.url, o.headers, deadline);
    try {
      socket.send({ t: 'hello', v: PROTOCOL_VERSION, mode: 'lockstep', fields: fields.self });
      await socket.next('welcome');
      const ids: AgentId[] = Array.from({ length: count }, (_, i) => (i % 3 === 0 ? i : i % 3 === 1 ? 1_000_000 + i : `warm-${i}`));
      const game = new WarmGame(fields, ids);
      games.push(game);
      socket.send({ t: 'spawn', id: 1, agents: ids.map((id, i) => ({ id, tree: o.trees[i % o.trees.length]!, seed: i })) });
      // The first snapshot right behind the spawn, as a game server that ticks at once sends it.
      if (playTicks > 0) socket.send(game.snapshot(1));
      const spawned = await socket.next('spawned');
      if (!Array.isArray(spawned['ids']) || spawned['ids'].length !== count) throw new Error(`warm-up spawn answered ${JSON.stringify(spawned['errors'] ?? null).slice(0, 200)}`);
      for (let t = 1; t <= playTicks; t++) {
        if (t > 1) socket.send(game.snapshot(t));
        game.decided(t, await socket.next('decisions'));
        ticks++;
      }
      socket.send({ t: 'despawn', id: 2, ids });
      await socket.next('despawned');
      socket.send({ t: 'bye' });
      await socket.closed;
      done += count;
    } finally {
      socket.terminate();
    }
  };
  try {
    for (let round = 0; round < o.rounds; round++) await play(agents, o.ticks);
    // The long plays, one game server per worker at once (each is placed whole on one worker).
    const tail = Math.min(o.tailAgents ?? 0, fit);
    const tailTicks = o.tailTicks ?? 0;
    if (o.ticks > 0 && tail > 0 && tailTicks > 0) {
      // Every play ended (its socket closed) before this returns, even when one failed: none goes on once the service is ready.
      const ended = await Promise.allSettled(Array.from({ length: Math.max(1, o.tailSessions ?? 1) }, () => play(tail, tailTicks)));
      const failed = ended.find((r) => r.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
    }
  } catch (err) {
    return { ms: performance.now() - started, agents: done, ticks, ...played(games), error: err instanceof Error ? err.message : String(err) };
  }
  return { ms: performance.now() - started, agents: done, ticks, ...played(games) };
}

/** A bare client socket for the warm-up: frames in order, the first `error` or `goodbye` fails the wait. */
class LoopbackSocket {
  private readonly frames: Array<Record<string, unknown>> = [];
  private wake: (() => void) | null = null;
  private failure: Error | null = null;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: WebSocket, private readonly deadline: number) {
    socket.on('message', (data: RawData) => {
      try {
        const frame = decode(Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)) as Record<string, unknown>;
        if (frame['t'] === 'error' || frame['t'] === 'goodbye') this.failure ??= new Error(`warm-up session: ${String(frame['t'])} ${String(frame['code'] ?? frame['reason'] ?? '')} ${String(frame['message'] ?? '')}`.trim());
        this.frames.push(frame);
      } catch (err) {
        this.failure ??= err instanceof Error ? err : new Error(String(err));
      }
      this.wake?.();
    });
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.failure ??= new Error('warm-up session: the socket closed');
        this.wake?.();
        resolve();
      }),
    );
    socket.on('error', () => {
      // The close that follows ends any wait.
    });
  }

  static open(url: string, headers: Record<string, string>, deadline: number): Promise<LoopbackSocket> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers, perMessageDeflate: false });
      const timer = setTimeout(() => {
        socket.terminate();
        reject(new Error('warm-up session: no connection in time'));
      }, Math.max(0, deadline - performance.now()));
      socket.once('open', () => {
        clearTimeout(timer);
        resolve(new LoopbackSocket(socket, deadline));
      });
      socket.once('unexpected-response', (_req, res) => {
        clearTimeout(timer);
        socket.terminate();
        reject(new Error(`warm-up session: upgrade refused with HTTP ${res.statusCode ?? '?'}`));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  send(msg: Record<string, unknown>): void {
    this.socket.send(encode(msg));
  }

  /** The next frame of type `t` (frames of other types before it are skipped). */
  async next(t: string): Promise<Record<string, unknown>> {
    for (;;) {
      const i = this.frames.findIndex((f) => f['t'] === t);
      if (i >= 0) return this.frames.splice(0, i + 1)[i]!;
      if (this.failure !== null) throw this.failure;
      const left = this.deadline - performance.now();
      if (left <= 0) throw new Error(`warm-up session: no ${t} in time`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  terminate(): void {
    if (this.socket.readyState !== this.socket.CLOSED) this.socket.terminate();
  }
}
