// The arena's connection to Canopy: one fixed-rate session whose agents are the room's NPCs. Each
// game tick pushes the NPCs' rows, the world and the finished actions' results; every `decisions`
// starts and stops actions in the world. Reconnects resume the session; a lost session is re-spawned.

import { CanopyClient, type Decisions, type ActionResult, type RowWriter, type SpawnAgent } from '../../../src/client/index.js';
import { Samples } from './samples.js';
import { ArenaWorld, describeNpc } from './world.js';

/** Spawn messages stay well under the service's frame limit. */
const SPAWN_BATCH = 2000;
/** Send times of recent ticks, for the lateness of decisions (`basedOn` → when that tick was sent). */
const RING = 1024;

/** What the link saw: service errors, agent errors, reconnects. */
export interface LinkCounters {
  frames: number;
  actions: number;
  cancels: number;
  agentErrors: number;
  serviceErrors: number;
  reconnects: number;
  respawns: number;
  /** Results that waited for a later snapshot because the socket was down. */
  heldResults: number;
}

/** Options of {@link CanopyLink.open}. */
export interface LinkOptions {
  /** The service's WebSocket URL, e.g. `ws://127.0.0.1:8080/v1/ws`. */
  readonly url: string;
  readonly apiKey?: string;
  /** The room's tick rate, also the session's (fixed mode). */
  readonly hz: number;
  /** Called with the first message of each kind of problem (the room logs it). */
  readonly onProblem?: (message: string) => void;
}

/** One Canopy session driving the NPCs of one {@link ArenaWorld}. */
export class CanopyLink {
  readonly counters: LinkCounters = { frames: 0, actions: 0, cancels: 0, agentErrors: 0, serviceErrors: 0, reconnects: 0, respawns: 0, heldResults: 0 };
  /** Lateness of decisions: receipt − send time of the snapshot they were based on (ms). */
  readonly lateness = new Samples(4096);
  /** The same over the last 200 frames (the page's figures). */
  readonly recentLateness = new Samples(200);
  /** The first problem of each kind, for the room's log and the tests. */
  readonly problems: string[] = [];
  private rows: RowWriter;
  private readonly sentAt = new Float64Array(RING);
  private lastTick = 0;
  /** Results not yet sent (the socket was down when their tick went out). */
  private held: ActionResult[] = [];

  private constructor(
    readonly client: CanopyClient,
    private readonly world: ArenaWorld,
    private readonly options: LinkOptions,
  ) {
    this.rows = client.rows();
    client.on('decisions', (d) => this.onDecisions(d));
    client.on('error', (e) => {
      this.counters.serviceErrors++;
      this.problem(`service error ${e.code}: ${e.message}`);
    });
    client.on('reconnect', ({ resumed }) => {
      this.counters.reconnects++;
      // A resumed session kept its agents and their running actions; a new one starts from nothing.
      if (!resumed) void this.respawn();
    });
    client.on('close', (e) => this.problem(`session closed (${e.code} ${e.reason})${e.error ? `: ${e.error.message}` : ''}`));
  }

  /** Opens the session (fixed mode at the room's rate) and spawns one agent per NPC. */
  static async open(world: ArenaWorld, options: LinkOptions): Promise<CanopyLink> {
    const client = await CanopyClient.connect(options.url, {
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      mode: 'fixed',
      hz: options.hz,
      fields: ArenaWorld.FIELDS,
      requestTimeoutMs: 30_000,
    });
    const link = new CanopyLink(client, world, options);
    await link.spawn();
    return link;
  }

  /** The session id (the inspector and `GET /v1/sessions/:id/agents/:agent` name it). */
  get session(): string {
    return this.client.session;
  }

  /** Sends tick `tick`'s snapshot: rows, world, and the results of actions that finished. */
  push(tick: number): void {
    const results = this.world.results();
    const all = this.held.length === 0 ? results : [...this.held, ...results];
    this.world.writeRows(this.rows);
    this.sentAt[tick % RING] = performance.now();
    this.lastTick = tick;
    const sent = this.client.snapshot({ tick, time: this.world.time, world: this.world.worldState(), agents: this.rows, results: all });
    if (sent) {
      this.held = [];
    } else {
      // Disconnected: a result must not be lost, or its tree would wait for it forever.
      this.held = all.slice();
      this.counters.heldResults += results.length;
    }
  }

  /** Ends the session (`bye`: the service frees the agents). */
  async close(): Promise<void> {
    await this.client.bye().catch(() => undefined);
  }

  private async spawn(): Promise<void> {
    const n = this.world.size;
    for (let from = 0; from < n; from += SPAWN_BATCH) {
      const batch: SpawnAgent[] = [];
      for (let i = from; i < Math.min(n, from + SPAWN_BATCH); i++) batch.push({ id: i, ...describeNpc(i), seed: i + 1 });
      const out = await this.client.spawn(batch);
      if (out.errors.length > 0) throw new Error(`spawn refused ${out.errors.length} NPCs, first: ${out.errors[0]!.code} ${out.errors[0]!.message}`);
    }
  }

  private async respawn(): Promise<void> {
    this.counters.respawns++;
    this.world.abandonActions();
    this.held = [];
    this.rows = this.client.rows();
    await this.spawn().catch((err: unknown) => this.problem(`re-spawn failed: ${(err as Error).message}`));
  }

  private onDecisions(d: Decisions): void {
    const c = this.counters;
    c.frames++;
    c.actions += d.actions.length;
    c.cancels += d.cancels.length;
    if (d.basedOn !== undefined && d.basedOn > this.lastTick - RING && d.basedOn <= this.lastTick && d.basedOn > 0) {
      const late = performance.now() - this.sentAt[d.basedOn % RING]!;
      this.lateness.record(late);
      this.recentLateness.record(late);
    }
    if (d.errors.length > 0) {
      c.agentErrors += d.errors.length;
      const [id, code, message] = d.errors[0]!;
      this.problem(`agent ${String(id)} stopped: ${code} ${message}`);
    }
    this.world.apply(d.actions, d.cancels);
  }

  private problem(message: string): void {
    if (this.problems.length < 20) this.problems.push(message);
    this.options.onProblem?.(message);
  }
}
