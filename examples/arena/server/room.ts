// The arena room (Colyseus): a 20 Hz fixed-timestep simulation loop whose NPCs are Canopy agents. Each tick steps
// the world, pushes the NPCs' rows and finished actions to Canopy; decisions arrive on the link's own
// events. Browsers joining the room get the map once, then a packed frame of every NPC 10 times a second.

import { Room, type Client } from '@colyseus/core';
import { CanopyLink } from './link.js';
import { ACTIONS } from './rules.js';
import { Samples } from './samples.js';
import { ArenaWorld, describeNpc } from './world.js';

/** Options of the arena room (`matchMaker.createRoom('arena', options)`). */
export interface ArenaOptions {
  /** Canopy's WebSocket URL (`ws://host:port/v1/ws`). */
  readonly canopyUrl: string;
  /** Base URL of Canopy's HTTP API as the browser reaches it (inspection links). */
  readonly canopyHttp: string;
  readonly npcs?: number;
  readonly hz?: number;
  readonly seed?: number;
  /** Frames to browsers every this many ticks (default 2: 10 frames a second at 20 Hz). */
  readonly frameEvery?: number;
}

/** Per NPC in a frame: x, y, target x, target y (0xffff: none), action codes (move << 8 | hands), hp. */
export const FRAME_STRIDE = 6;
/** Coordinates travel as 16-bit fractions of the arena's size. */
export const QUANT = 65534;

/** The one message a browser receives on joining. */
export interface SetupMessage {
  readonly width: number;
  readonly height: number;
  readonly walls: ArenaWorld['walls'];
  readonly cover: ArenaWorld['cover'];
  readonly labels: readonly string[];
  readonly trees: readonly string[];
  readonly actions: readonly string[];
  readonly session: string;
  readonly canopyHttp: string;
  readonly hz: number;
  readonly you: string;
}

/** The Colyseus room: one arena, one Canopy session. */
export class ArenaRoom extends Room {
  world!: ArenaWorld;
  link!: CanopyLink;
  hz = 20;
  tick = 0;
  /** Work per tick: world step, rows, snapshot, frame (ms). */
  readonly tickTime = new Samples(4096);
  /** The same over the last 10 s, for the page's figures. */
  private readonly recentTick = new Samples(200);
  private canopyHttp = '';
  private frameEvery = 2;
  private frame: Uint16Array = new Uint16Array(0);
  private setup: Omit<SetupMessage, 'you'> | undefined;

  override async onCreate(options: ArenaOptions): Promise<void> {
    // The room lives as long as the server: it simulates with nobody watching.
    this.autoDispose = false;
    this.hz = options.hz ?? 20;
    this.frameEvery = options.frameEvery ?? 2;
    this.canopyHttp = options.canopyHttp;
    this.world = new ArenaWorld(options.npcs ?? 300, options.seed ?? 1);
    this.frame = new Uint16Array(this.world.size * FRAME_STRIDE);
    this.link = await CanopyLink.open(this.world, {
      url: options.canopyUrl,
      hz: this.hz,
      onProblem: (message) => console.error(`[arena] ${message}`),
    });
    this.onMessage('move', (client: Client, m: unknown) => {
      const p = this.world.players.get(client.sessionId);
      if (!p || typeof m !== 'object' || m === null) return;
      const { vx, vy } = m as { vx?: unknown; vy?: unknown };
      p.vx = clampUnit(vx);
      p.vy = clampUnit(vy);
    });
    // Colyseus's fixed timestep: every step advances the same 1/hz of game time, and a late frame
    // runs the steps it missed (a few at most), so game time keeps up with the wall clock.
    this.setFixedTimestep((step) => this.step(step.dt), this.hz);
  }

  override onJoin(client: Client): void {
    const w = this.world;
    w.players.set(client.sessionId, { x: w.width / 2, y: w.height / 2, vx: 0, vy: 0 });
    this.setup ??= {
      width: w.width,
      height: w.height,
      walls: w.walls,
      cover: w.cover,
      labels: Array.from({ length: w.size }, (_, i) => describeNpc(i).label),
      trees: Array.from({ length: w.size }, (_, i) => describeNpc(i).tree),
      actions: ACTIONS,
      session: this.link.session,
      canopyHttp: this.canopyHttp,
      hz: this.hz,
    };
    client.send('setup', { ...this.setup, you: client.sessionId } satisfies SetupMessage);
  }

  override onLeave(client: Client): void {
    this.world.players.delete(client.sessionId);
  }

  override async onDispose(): Promise<void> {
    await this.link?.close();
  }

  /** The figures: tick time and Canopy's lateness (ms), and the counters. */
  stats(): { tick: number; tickTime: ReturnType<Samples['summary']>; lateness: ReturnType<Samples['summary']>; world: ArenaWorld['counters']; link: CanopyLink['counters'] } {
    return { tick: this.tick, tickTime: this.tickTime.summary(), lateness: this.link.lateness.summary(), world: this.world.counters, link: this.link.counters };
  }

  /** One game tick. */
  private step(dt: number): void {
    const started = performance.now();
    const n = ++this.tick;
    this.world.step(dt);
    this.link.push(n);
    if (n % this.frameEvery === 0 && this.clients.length > 0) this.sendFrame();
    const took = performance.now() - started;
    this.tickTime.record(took);
    this.recentTick.record(took);
  }

  private sendFrame(): void {
    const w = this.world;
    const f = this.frame;
    const qx = QUANT / w.width;
    const qy = QUANT / w.height;
    for (let i = 0, o = 0; i < w.size; i++, o += FRAME_STRIDE) {
      f[o] = Math.round(w.x[i]! * qx);
      f[o + 1] = Math.round(w.y[i]! * qy);
      const tx = w.tx[i]!;
      f[o + 2] = Number.isNaN(tx) ? 0xffff : Math.round(Math.min(w.width, Math.max(0, tx)) * qx);
      f[o + 3] = Number.isNaN(tx) ? 0xffff : Math.round(Math.min(w.height, Math.max(0, w.ty[i]!)) * qy);
      f[o + 4] = (w.moveAction[i]! << 8) | w.handAction[i]!;
      f[o + 5] = Math.max(0, Math.round(w.hp[i]!));
    }
    const raiders: number[] = [];
    for (let r = 0; r < w.rx.length; r++) if (w.ralive[r] === 1) raiders.push(Math.round(w.rx[r]! * qx), Math.round(w.ry[r]! * qy));
    const players: Array<[string, number, number]> = [];
    for (const [id, p] of w.players) players.push([id, Math.round(p.x * qx), Math.round(p.y * qy)]);
    const tickTime = this.recentTick.summary();
    const lateness = this.link.recentLateness.summary();
    this.broadcast('frame', {
      tick: this.tick,
      npcs: new Uint8Array(f.buffer, f.byteOffset, f.byteLength),
      raiders,
      players,
      hud: { tickP50: round1(tickTime.p50), tickP99: round1(tickTime.p99), lateP50: round1(lateness.p50), lateP99: round1(lateness.p99) },
    });
  }
}

function clampUnit(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? Math.max(-1, Math.min(1, v)) : 0;
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}
