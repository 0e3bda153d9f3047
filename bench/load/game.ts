// One simulated game server: a CanopyClient session, its GameWorld, and the measurements of its ticks.
// Lockstep: each snapshot is a `lockstep()` request, timed from its scheduled send to its decisions.
// Fixed: snapshots are fire-and-forget; decisions arrive on the service's clock and their spacing and
// staleness (receipt − scheduled send of the snapshot they were based on) are recorded.

import { CanopyClient, type AgentId, type Decisions, type Mode, type RowEncoder, type SpawnAgent } from '../../src/client/index.js';
import { agentIds, type IdStyle } from './ids.js';
import { LatencyHistogram } from './histogram.js';
import { GameWorld, isSquadTree } from './world.js';
import { DueSchedule, everyOf, type LodMix, type LodRows } from './lod.js';

/** Largest spawn message, in agents. */
const SPAWN_BATCH = 5000;
/** Scheduled times kept for staleness lookups: ticks older than this many are not looked up. */
const TICK_RING = 4096;

/** Counters of one game server over the measured window (reset at its start). */
export interface GameCounters {
  /** Snapshots sent. */
  snapshots: number;
  /** Lockstep: snapshots answered with their decisions. */
  answered: number;
  /** `decisions` frames received. */
  frames: number;
  actions: number;
  cancels: number;
  done: number;
  /** Observation rows sent. */
  rows: number;
  /** Agent errors reported in decisions (`decisions.errors`). */
  agentErrors: number;
  /** `error` frames and lockstep refusals. */
  serviceErrors: number;
  /** Lockstep requests that timed out or were cut by a closed socket. */
  lost: number;
  /** Action results sent. */
  results: number;
}

function zeroCounters(): GameCounters {
  return { snapshots: 0, rows: 0, answered: 0, frames: 0, actions: 0, cancels: 0, done: 0, agentErrors: 0, serviceErrors: 0, lost: 0, results: 0 };
}

export interface GameOptions {
  readonly url: string;
  readonly apiKey?: string;
  readonly mode: Mode;
  readonly hz: number;
  readonly agents: number;
  readonly tree: string;
  readonly seed: number;
  /** How long a lockstep tick may stay unanswered before it counts as lost (ms). */
  readonly requestTimeoutMs: number;
  /** Agent ids (bench/load/ids.ts): dense 0..N-1 when absent. */
  readonly ids?: IdStyle;
  /** This game server's number among all (sparse and string ids are unique per game server). */
  readonly index?: number;
  /** Agents per spawn message (default 5000). */
  readonly spawnBatch?: number;
  /** Level of detail: tick intervals given at spawn (`--lod`); absent: every agent ticks every tick. */
  readonly lod?: LodMix;
  /** With `lod`: `due` sends an agent's row only on the ticks the service ticks it (lockstep); default `all`. */
  readonly lodRows?: LodRows;
}

/** One game server. */
export class GameServer {
  readonly options: GameOptions;
  readonly world: GameWorld;
  /** The agents' ids, by world index; null: dense (the index is the id). */
  readonly ids: readonly AgentId[] | null;
  client!: CanopyClient;
  private rows!: RowEncoder;
  counters: GameCounters = zeroCounters();
  /** Lockstep: scheduled send → decisions received. */
  readonly latency = new LatencyHistogram();
  /**
   * Lockstep: the snapshot handed to the socket → its decisions received: `latency` without the generator's own
   * lateness in starting the tick (its other game servers' work, its collector), which a game server on a machine of
   * its own would not add.
   */
  readonly fromSend = new LatencyHistogram();
  /** Same as `latency`, reset at every progress line. */
  readonly recent = new LatencyHistogram();
  /** How late the generator itself started each tick against its schedule. */
  readonly sendLag = new LatencyHistogram();
  /** The generator's work per tick: world step, rows, encoding and sending the snapshot. */
  readonly work = new LatencyHistogram();
  /** Fixed: time between consecutive `decisions` frames. */
  readonly spacing = new LatencyHistogram();
  /** Fixed: receipt of decisions − scheduled send of the snapshot they were based on. */
  readonly staleness = new LatencyHistogram();
  /** Lockstep requests in flight. */
  outstanding = 0;
  /** `decisions` frames received since the session opened (progress lines). */
  framesSeen = 0;
  /** Measurement window [from, to) in `performance.now()` time: only ticks scheduled inside it are recorded. */
  windowFrom = Infinity;
  windowTo = Infinity;
  /** Set when the session was lost (socket closed, fatal error). */
  failure: string | undefined;
  /** Every answered lockstep tick, in or out of the window: its scheduled send and latency (the burst runs' phases). */
  onLatency: ((dueAt: number, ms: number, fromSend: number) => void) | null = null;
  private readonly scheduled = new Float64Array(TICK_RING);
  private lastFrameAt = -1;
  private lastTick = -1;
  /** The last tick sent. */
  private sentTick = 0;
  private readonly inFlight = new Map<number, number>();
  /** Spawn messages' agent lists built ahead (prepareSpawn), or null. */
  private spawnBatches: SpawnAgent[][] | null = null;
  private firstError: string | undefined;
  /** `--lod-rows due`: the agents due on each session tick; null: every agent's row every tick. */
  readonly dueRows: DueSchedule | null;
  /** Snapshots sent since the spawn: the service's session tick count (0 = the first), which the phases count from. */
  private sessionTicks = 0;

  constructor(options: GameOptions) {
    this.options = options;
    this.ids = agentIds(options.ids ?? 'dense', options.index ?? 0, options.agents);
    this.world = new GameWorld(options.agents, options.seed, this.ids, isSquadTree(options.tree));
    if (options.lodRows === 'due' && options.mode !== 'lockstep') throw new Error('lodRows due: lockstep only (in fixed mode the service clock counts the ticks)');
    this.dueRows = options.lod !== undefined && options.lodRows === 'due' ? new DueSchedule(options.lod, options.agents, this.ids) : null;
  }

  /** The first error message the service sent (for the report). */
  get sampleError(): string | undefined {
    return this.firstError;
  }

  /** Opens the session and spawns the agents. */
  async open(): Promise<void> {
    await this.connect();
    await this.spawn();
  }

  /** Opens the session (a fixed-mode session starts ticking now). */
  async connect(): Promise<void> {
    const o = this.options;
    this.client = await CanopyClient.connect(o.url, {
      ...(o.apiKey !== undefined ? { apiKey: o.apiKey } : {}),
      mode: o.mode,
      ...(o.mode === 'fixed' ? { hz: o.hz } : {}),
      fields: this.world.fields,
      reconnect: false,
      requestTimeoutMs: Math.max(o.requestTimeoutMs, 30_000),
      connectTimeoutMs: 30_000,
    });
    this.rows = this.client.rowEncoder();
    this.client.on('error', (e) => {
      this.counters.serviceErrors++;
      this.firstError ??= `${e.code}: ${e.message}`;
    });
    this.client.on('close', (e) => {
      this.failure ??= `session closed (${e.code}${e.reason === '' ? '' : ` ${e.reason}`})${e.error ? `: ${e.error.message}` : ''}`;
    });
    if (o.mode === 'fixed') this.client.on('decisions', (d) => this.onFixedDecisions(d));
  }

  /**
   * Builds the spawn messages' agent lists now, so that `spawn()` only sends them: a burst that times from the
   * spawn's send (`--burst start`) does not count the generator's own building as the service's latency.
   */
  prepareSpawn(): void {
    this.spawnBatches = this.spawnMessages();
  }

  /** Spawns the agents, in batches (built by `prepareSpawn` if it was called, else now). */
  async spawn(): Promise<void> {
    const batches = this.spawnBatches ?? this.spawnMessages();
    this.spawnBatches = null;
    for (const batch of batches) {
      const out = await this.client.spawn(batch);
      if (out.errors.length > 0) throw new Error(`spawn refused ${out.errors.length} agents: ${out.errors[0]!.code} ${out.errors[0]!.message}`);
    }
  }

  /** The agent lists of the spawn messages, `spawnBatch` agents each. */
  private spawnMessages(): SpawnAgent[][] {
    const o = this.options;
    const batchSize = o.spawnBatch ?? SPAWN_BATCH;
    const batches: SpawnAgent[][] = [];
    for (let from = 0; from < o.agents; from += batchSize) {
      const batch: SpawnAgent[] = [];
      for (let i = from; i < Math.min(o.agents, from + batchSize); i++) {
        const every = o.lod === undefined ? 1 : everyOf(o.lod, i);
        batch.push({ id: this.ids === null ? i : this.ids[i]!, tree: o.tree, seed: o.seed * 1_000_003 + i, ...(every !== 1 ? { every } : {}) });
      }
      batches.push(batch);
    }
    return batches;
  }

  /** Despawns every agent, `batchSize` per message (default: all in one). */
  async despawnAll(batchSize = this.options.agents): Promise<void> {
    const o = this.options;
    for (let from = 0; from < o.agents; from += batchSize) {
      const batch: AgentId[] = [];
      for (let i = from; i < Math.min(o.agents, from + batchSize); i++) batch.push(this.ids === null ? i : this.ids[i]!);
      const out = await this.client.despawn(batch);
      if (out.errors.length > 0) throw new Error(`despawn refused ${out.errors.length} agents: ${out.errors[0]!.code} ${out.errors[0]!.message}`);
    }
  }

  /** Runs tick `n` of the game, due at `dueAt`: world step, rows, snapshot. */
  tick(n: number, dueAt: number, dt: number): void {
    if (this.failure !== undefined) return;
    const startedAt = performance.now();
    const world = this.world;
    world.step(dt);
    // Due rows: the agents the service ticks at this session tick (a skipped schedule tick is never sent, so the
    // count of snapshots sent, not `n`, is the service's tick count).
    world.writeEncodedRows(this.rows, this.dueRows === null ? null : this.dueRows.due(this.sessionTicks));
    this.sessionTicks++;
    const results = world.results();
    const shared = world.worldState();
    const inWindow = dueAt >= this.windowFrom && dueAt < this.windowTo;
    const c = this.counters;
    const time = n / this.options.hz;
    this.scheduled[n % TICK_RING] = dueAt;
    this.sentTick = n;
    if (this.options.mode === 'lockstep') {
      this.outstanding++;
      this.inFlight.set(n, dueAt);
      const answer = this.client.lockstep({ tick: n, time, agents: this.rows, results, ...(shared !== undefined ? { world: shared } : {}) });
      // Handed to the socket (encoded and written synchronously): latency from here leaves the generator's own lateness out.
      const sentAt = performance.now();
      answer.then(
        (d) => {
          const now = performance.now();
          this.outstanding--;
          this.inFlight.delete(n);
          if (inWindow) {
            this.latency.record(now - dueAt);
            this.fromSend.record(now - sentAt);
            c.answered++;
          }
          this.onLatency?.(dueAt, now - dueAt, now - sentAt);
          this.recent.record(now - dueAt);
          this.onDecisions(d, inWindow);
        },
        (err: unknown) => {
          this.outstanding--;
          this.inFlight.delete(n);
          const code = (err as { code?: string }).code;
          if (code === 'E_TIMEOUT' || code === 'E_CLOSED') {
            c.lost++;
            const now = performance.now();
            this.onLatency?.(dueAt, now - dueAt, now - sentAt); // a lower bound of its latency
          }
          else c.serviceErrors++;
          this.firstError ??= err instanceof Error ? err.message : String(err);
        },
      );
    } else {
      this.client.snapshot({ tick: n, time, agents: this.rows, results, ...(shared !== undefined ? { world: shared } : {}) });
    }
    if (inWindow) {
      c.snapshots++;
      c.rows += this.rows.length;
      c.results += results.length;
      this.sendLag.record(startedAt - dueAt);
      this.work.record(performance.now() - startedAt);
    }
  }

  /** Scheduled send times of the lockstep ticks still unanswered. */
  unansweredDue(): number[] {
    return [...this.inFlight.values()];
  }

  /**
   * Lockstep ticks still unanswered at the end: each is recorded with its age so far (a lower bound of its
   * latency: leaving them out would hide exactly the slow ones) and counted as lost. Returns how many.
   */
  settleOutstanding(now: number): number {
    let n = 0;
    for (const dueAt of this.inFlight.values()) {
      if (dueAt >= this.windowFrom && dueAt < this.windowTo) {
        this.latency.record(now - dueAt);
        this.counters.lost++;
        n++;
      }
    }
    this.inFlight.clear();
    return n;
  }

  /** Starts the measured window: counters and histograms restart. */
  startWindow(from: number, to: number): void {
    this.windowFrom = from;
    this.windowTo = to;
    this.counters = zeroCounters();
    this.latency.reset();
    this.fromSend.reset();
    this.sendLag.reset();
    this.work.reset();
    this.spacing.reset();
    this.staleness.reset();
  }

  /** Ends the session (`bye`: the service frees the agents). */
  async close(): Promise<void> {
    await this.client?.bye().catch(() => undefined);
  }

  private onFixedDecisions(d: Decisions): void {
    const now = performance.now();
    const inWindow = now >= this.windowFrom && now < this.windowTo;
    if (inWindow) {
      if (this.lastFrameAt >= 0 && d.tick > this.lastTick) this.spacing.record(now - this.lastFrameAt);
      const based = d.basedOn;
      // Staleness: how old the newest snapshot the service had used was, counted from its scheduled send.
      if (based !== undefined && based > 0 && based <= this.sentTick && based > this.sentTick - TICK_RING) {
        const dueAt = this.scheduled[based % TICK_RING]!;
        this.staleness.record(now - dueAt);
        this.recent.record(now - dueAt);
      }
    }
    this.lastFrameAt = now;
    if (d.tick > this.lastTick) this.lastTick = d.tick;
    this.onDecisions(d, inWindow);
  }

  private onDecisions(d: Decisions, inWindow: boolean): void {
    const c = this.counters;
    this.framesSeen++;
    if (inWindow) {
      c.frames++;
      c.actions += d.actions.length;
      c.cancels += d.cancels.length;
      c.done += d.done.length;
      c.agentErrors += d.errors.length;
    }
    if (d.errors.length > 0) this.firstError ??= `agent ${String(d.errors[0]![0])}: ${d.errors[0]![1]} ${d.errors[0]![2]}`;
    this.world.apply(d.actions, d.cancels);
  }
}
