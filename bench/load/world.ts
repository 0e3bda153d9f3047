// The simulated world of one game server, for the guard tree (trees/guard.json): each agent patrols
// its waypoints, enemies appear, close in, deal damage and are lost or killed; agents regenerate hp.
// Actions from decisions move agents and finish after simulated durations (moveTo: distance-based,
// shoot: short, flee: a few seconds), so trees really run, abort and cancel. State lives in typed
// arrays and rows are rewritten in place: a tick allocates nothing.

import type { ActionDecision, ActionResult, AgentId, CancelDecision, RowEncoder, RowWriter } from '../../src/client/index.js';

/** The observation fields guard.json reads (`self.hp`, `self.enemyVisible`, `self.enemyDist`, `self.enemyPos`). */
export const FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos'] as const;

/**
 * The fields of the squad tree (trees/squad.yaml and its subtree take-cover), after FIELDS: the agent's
 * position, when it was last hit (or null), and its formation slot (its current waypoint, moving on every
 * 10 s). Those trees also read `world.enemies` and `world.cover` (GameWorld.worldState).
 */
export const SQUAD_FIELDS = [...FIELDS, 'pos', 'lastHit', 'formationSlot'] as const;

/** Trees that read SQUAD_FIELDS and the world state. */
export function isSquadTree(tree: string): boolean {
  return tree === 'squad' || tree === 'take-cover';
}

/** At most this many enemies in `world.enemies` (one session is one match: a few dozen enemies, not one per agent). */
const WORLD_ENEMIES = 64;

/** What an agent is doing on behalf of its tree. */
const Doing = { NOTHING: 0, MOVE: 1, FLEE: 2, SHOOT: 3, OTHER: 4 } as const;

/** World constants, in world units and seconds. */
export const RULES = {
  walkSpeed: 2,
  runSpeed: 5,
  fleeSpeed: 6,
  fleeSeconds: 2,
  shootSeconds: 0.3,
  /** Actions the simulation does not know finish after this long. */
  otherSeconds: 0.5,
  waypointRadius: 6,
  enemySpeed: 1.5,
  /** Enemies close in to this distance, then hold. */
  enemyHoldDistance: 3,
  /** Enemies hurt agents within this distance. */
  enemyRange: 7,
  /** Shots hit within this distance. */
  shotRange: 8,
  /** Beyond this distance an enemy is lost from sight. */
  sightRange: 25,
  regenPerSecond: 2,
  maxHp: 100,
} as const;

/** Running totals of what the world saw and did; the game server reads and resets them. */
export interface WorldCounters {
  actions: number;
  cancels: number;
  /** Cancels naming a seq that was not running (already finished on the game's side). */
  staleCancels: number;
  results: number;
  kills: number;
  deaths: number;
  encounters: number;
}

/**
 * N agents of one game server, with ids 0..N-1. Call {@link step} once per game tick, then
 * {@link writeRows} and send {@link results} with the snapshot; feed every `decisions` to {@link apply}.
 */
export class GameWorld {
  readonly size: number;
  /** Game time, seconds. */
  time = 0;
  readonly counters: WorldCounters = { actions: 0, cancels: 0, staleCancels: 0, results: 0, kills: 0, deaths: 0, encounters: 0 };

  private readonly x: Float64Array;
  private readonly y: Float64Array;
  private readonly hp: Float64Array;
  private readonly homeX: Float64Array;
  private readonly homeY: Float64Array;
  private readonly phase: Float64Array;
  private readonly enemyVisible: Uint8Array;
  private readonly ex: Float64Array;
  private readonly ey: Float64Array;
  private readonly enemyHp: Float64Array;
  private readonly enemyDps: Float64Array;
  /** Enemy visible: when it slips out of sight; not visible: when the next one appears. */
  private readonly enemyNext: Float64Array;
  private readonly doing: Uint8Array;
  private readonly seq: Float64Array;
  private readonly tx: Float64Array;
  private readonly ty: Float64Array;
  private readonly speed: Float64Array;
  private readonly until: Float64Array;
  /** Per agent, the `[x, y]` array sent as `enemyPos`, rewritten in place. */
  private readonly enemyPos: number[][];
  /** Squad fields (SQUAD_FIELDS), when the world was made with `squad`. */
  private readonly squad: boolean;
  private readonly lastHit: Float64Array;
  private readonly posOut: number[][] = [];
  private readonly slotOut: number[][] = [];
  /** `world` of the snapshots for squad trees: rewritten in place every tick. */
  private readonly shared: { enemies: number[][]; cover: number[][] } = { enemies: [], cover: [] };
  private readonly enemyOut: number[][] = [];
  /** Result tuples, reused tick after tick; the first `resultCount` are this tick's. */
  private readonly resultPool: Array<[AgentId, number, 'success' | 'failure']> = [];
  private readonly resultList: Array<[AgentId, number, 'success' | 'failure']> = [];
  private rng: number;
  /** The agents' ids when they are not 0..N-1 (`--ids sparse|string`), and the index of each; null: dense. */
  private readonly ids: readonly AgentId[] | null;
  private readonly indexOf: Map<AgentId, number> | null;

  /** `ids`: the agents' ids, one per agent (default: 0..size-1). `squad`: rows and world for the squad tree (SQUAD_FIELDS). */
  constructor(size: number, seed = 1, ids: readonly AgentId[] | null = null, squad = false) {
    this.size = size;
    if (ids !== null && ids.length !== size) throw new RangeError(`GameWorld: ${ids.length} ids for ${size} agents`);
    this.ids = ids;
    this.indexOf = ids === null ? null : new Map(ids.map((id, i) => [id, i]));
    this.squad = squad;
    this.lastHit = new Float64Array(squad ? size : 0).fill(-1);
    this.rng = (seed >>> 0) || 1;
    const f = (): Float64Array => new Float64Array(size);
    this.x = f();
    this.y = f();
    this.hp = f();
    this.homeX = f();
    this.homeY = f();
    this.phase = f();
    this.enemyVisible = new Uint8Array(size);
    this.ex = f();
    this.ey = f();
    this.enemyHp = f();
    this.enemyDps = f();
    this.enemyNext = f();
    this.doing = new Uint8Array(size);
    this.seq = f();
    this.tx = f();
    this.ty = f();
    this.speed = f();
    this.until = f();
    this.enemyPos = [];
    for (let i = 0; i < size; i++) {
      // Homes on a grid 50 units apart; each agent starts at its first waypoint.
      this.homeX[i] = (i % 256) * 50;
      this.homeY[i] = Math.floor(i / 256) * 50;
      this.phase[i] = this.random() * 2 * Math.PI;
      this.x[i] = this.waypointX(i, 0);
      this.y[i] = this.waypointY(i, 0);
      this.hp[i] = 60 + this.random() * 40;
      // First encounters spread over the first 10 s, so the population does not act in lockstep.
      this.enemyNext[i] = this.random() * 10;
      this.enemyPos.push([0, 0]);
      if (squad) {
        this.posOut.push([0, 0]);
        this.slotOut.push([0, 0]);
      }
    }
    if (squad) {
      for (let k = 0; k < WORLD_ENEMIES; k++) this.enemyOut.push([0, 0]);
      // Cover spots: one near each of the first 16 homes.
      for (let k = 0; k < Math.min(16, size); k++) this.shared.cover.push([this.homeX[k]! + 8, this.homeY[k]! + 8]);
    }
  }

  /** The action results of the last step: valid until the next step (the SDK encodes synchronously). */
  results(): readonly ActionResult[] {
    return this.resultList;
  }

  /** Advances the world by `dt` seconds: enemies, damage, regeneration, and the agents' actions. */
  step(dt: number): void {
    const t = (this.time += dt);
    this.resultList.length = 0;
    const { x, y, hp, ex, ey, enemyVisible, doing } = this;
    for (let i = 0; i < this.size; i++) {
      // Enemies: appear, close in, hurt, slip away.
      let dist = 0;
      if (enemyVisible[i] === 1) {
        let dx = ex[i]! - x[i]!;
        let dy = ey[i]! - y[i]!;
        dist = Math.sqrt(dx * dx + dy * dy);
        if (dist > RULES.enemyHoldDistance) {
          const k = (RULES.enemySpeed * dt) / dist;
          ex[i] = ex[i]! - dx * k;
          ey[i] = ey[i]! - dy * k;
          dx = ex[i]! - x[i]!;
          dy = ey[i]! - y[i]!;
          dist = Math.sqrt(dx * dx + dy * dy);
        }
        if (dist <= RULES.enemyRange) {
          hp[i] = hp[i]! - this.enemyDps[i]! * dt;
          if (this.squad) this.lastHit[i] = t;
        }
        if (dist > RULES.sightRange || t >= this.enemyNext[i]!) this.loseEnemy(i, t);
      } else if (t >= this.enemyNext[i]!) {
        this.spawnEnemy(i, t);
        dist = Math.hypot(ex[i]! - x[i]!, ey[i]! - y[i]!);
      }
      if (hp[i]! <= 0) {
        // Killed: back home with full health; whatever it was doing is over.
        this.counters.deaths++;
        hp[i] = RULES.maxHp;
        x[i] = this.homeX[i]!;
        y[i] = this.homeY[i]!;
        this.loseEnemy(i, t);
        if (doing[i] !== Doing.NOTHING) this.finish(i, false);
      } else if (hp[i]! < RULES.maxHp && (enemyVisible[i] === 0 || dist > RULES.enemyRange)) {
        hp[i] = Math.min(RULES.maxHp, hp[i]! + RULES.regenPerSecond * dt);
      }

      switch (doing[i]) {
        case Doing.MOVE:
          if (this.moveToward(i, this.tx[i]!, this.ty[i]!, this.speed[i]! * dt)) this.finish(i, true);
          break;
        case Doing.FLEE:
          if (enemyVisible[i] === 1) this.moveAway(i, RULES.fleeSpeed * dt);
          if (t >= this.until[i]!) this.finish(i, true);
          break;
        case Doing.SHOOT:
          if (t >= this.until[i]!) this.shoot(i, t);
          break;
        case Doing.OTHER:
          if (t >= this.until[i]!) this.finish(i, true);
          break;
        default:
          break;
      }
    }
  }

  /** The fields the rows carry (the session's `fields`). */
  get fields(): readonly string[] {
    return this.squad ? SQUAD_FIELDS : FIELDS;
  }

  /** The snapshot's `world` for squad trees (the first WORLD_ENEMIES visible enemies, the cover spots); else undefined. */
  worldState(): { enemies: number[][]; cover: number[][] } | undefined {
    if (!this.squad) return undefined;
    const { enemies } = this.shared;
    enemies.length = 0;
    for (let i = 0; i < this.size && enemies.length < WORLD_ENEMIES; i++) {
      if (this.enemyVisible[i] !== 1) continue;
      const p = this.enemyOut[enemies.length]!;
      p[0] = this.ex[i]!;
      p[1] = this.ey[i]!;
      enemies.push(p);
    }
    return this.shared;
  }

  /**
   * Writes the agents' observations: one row per agent, `[id, hp, enemyVisible, enemyDist, enemyPos]` (+ SQUAD_FIELDS'
   * three); `only`: just these agents (indices), as a game with level of detail sends only the agents due this tick.
   */
  writeRows(rows: RowWriter, only: ArrayLike<number> | null = null): void {
    const { x, y, hp, ex, ey, enemyVisible, enemyPos, ids } = this;
    rows.begin();
    const count = only === null ? this.size : only.length;
    for (let r = 0; r < count; r++) {
      const i = only === null ? r : only[r]!;
      const row = rows.row(ids === null ? i : ids[i]!);
      row[1] = Math.round(hp[i]!); // games send whole hit points: smaller frames
      if (enemyVisible[i] === 1) {
        const dx = ex[i]! - x[i]!;
        const dy = ey[i]! - y[i]!;
        const pos = enemyPos[i]!;
        pos[0] = ex[i]!;
        pos[1] = ey[i]!;
        row[2] = true;
        row[3] = Math.sqrt(dx * dx + dy * dy);
        row[4] = pos;
      } else {
        row[2] = false;
        row[3] = null;
        row[4] = null;
      }
      if (this.squad) {
        const pos = this.posOut[i]!;
        pos[0] = x[i]!;
        pos[1] = y[i]!;
        const slot = this.slotOut[i]!;
        const k = Math.floor(this.time / 10) % 3;
        slot[0] = this.waypointX(i, k);
        slot[1] = this.waypointY(i, k);
        row[5] = pos;
        row[6] = this.lastHit[i]! < 0 ? null : this.lastHit[i]!;
        row[7] = slot;
      }
    }
  }

  /** {@link writeRows}' rows written straight into bytes (the SDK's RowEncoder): the same values, the same bytes. */
  writeEncodedRows(rows: RowEncoder, only: ArrayLike<number> | null = null): void {
    const { x, y, hp, ex, ey, enemyVisible, ids } = this;
    rows.begin();
    const count = only === null ? this.size : only.length;
    for (let r = 0; r < count; r++) {
      const i = only === null ? r : only[r]!;
      rows.row(ids === null ? i : ids[i]!).number(Math.round(hp[i]!));
      if (enemyVisible[i] === 1) {
        const dx = ex[i]! - x[i]!;
        const dy = ey[i]! - y[i]!;
        rows.boolean(true).number(Math.sqrt(dx * dx + dy * dy)).point(ex[i]!, ey[i]!);
      } else {
        rows.boolean(false).nil().nil();
      }
      if (this.squad) {
        const k = Math.floor(this.time / 10) % 3;
        rows.point(x[i]!, y[i]!);
        if (this.lastHit[i]! < 0) rows.nil();
        else rows.number(this.lastHit[i]!);
        rows.point(this.waypointX(i, k), this.waypointY(i, k));
      }
    }
  }

  /** Applies one `decisions`: starts actions, stops cancelled ones. Unknown ids are ignored (and counted by the caller). */
  apply(actions: readonly ActionDecision[], cancels: readonly CancelDecision[]): number {
    let unknown = 0;
    // Cancels first: a tree that aborts one action and starts another in the same tick sends both.
    for (let k = 0; k < cancels.length; k++) {
      const c = cancels[k]!;
      const i = this.index(c[0]);
      if (i < 0) {
        unknown++;
        continue;
      }
      this.counters.cancels++;
      if (this.seq[i] === c[1] && this.doing[i] !== Doing.NOTHING) this.doing[i] = Doing.NOTHING;
      else this.counters.staleCancels++;
    }
    for (let k = 0; k < actions.length; k++) {
      const a = actions[k]!;
      const i = this.index(a[0]);
      if (i < 0) {
        unknown++;
        continue;
      }
      this.counters.actions++;
      this.start(i, a[1], a[2], a[3]);
    }
    return unknown;
  }

  /** hp of agent `i` (tests). */
  hpOf(i: number): number {
    return this.hp[i]!;
  }

  /** What agent `i` is doing: 'nothing', 'move', 'flee', 'shoot' or 'other' (tests). */
  doingOf(i: number): string {
    return ['nothing', 'move', 'flee', 'shoot', 'other'][this.doing[i]!]!;
  }

  // -------------------------------------------------------------------------------------------

  private index(id: unknown): number {
    if (this.indexOf !== null) return this.indexOf.get(id as AgentId) ?? -1;
    return typeof id === 'number' && id >= 0 && id < this.size && Number.isInteger(id) ? id : -1;
  }

  private start(i: number, seq: number, action: string, args: unknown): void {
    const t = this.time;
    this.seq[i] = seq;
    const a = (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown>;
    switch (action) {
      case 'moveTo': {
        this.speed[i] = a.speed === 'run' ? RULES.runSpeed : RULES.walkSpeed;
        const to = a.to;
        if (Array.isArray(to) && typeof to[0] === 'number' && typeof to[1] === 'number') {
          this.tx[i] = to[0];
          this.ty[i] = to[1];
        } else if (typeof a.waypoint === 'number') {
          this.tx[i] = this.waypointX(i, a.waypoint);
          this.ty[i] = this.waypointY(i, a.waypoint);
        } else {
          this.doing[i] = Doing.OTHER;
          this.until[i] = t + RULES.otherSeconds;
          return;
        }
        this.doing[i] = Doing.MOVE;
        return;
      }
      case 'flee':
        this.doing[i] = Doing.FLEE;
        this.until[i] = t + RULES.fleeSeconds;
        return;
      case 'shoot':
        this.doing[i] = Doing.SHOOT;
        this.until[i] = t + RULES.shootSeconds;
        return;
      case 'aim':
        return; // instant in guard.json: no result is expected, and the action before it goes on
      default:
        this.doing[i] = Doing.OTHER;
        this.until[i] = t + RULES.otherSeconds;
        return;
    }
  }

  private shoot(i: number, t: number): void {
    if (this.enemyVisible[i] === 0) {
      this.finish(i, false);
      return;
    }
    const dist = Math.hypot(this.ex[i]! - this.x[i]!, this.ey[i]! - this.y[i]!);
    if (dist > RULES.shotRange) {
      this.finish(i, false);
      return;
    }
    this.enemyHp[i] = this.enemyHp[i]! - (20 + this.random() * 25);
    if (this.enemyHp[i]! <= 0) {
      this.counters.kills++;
      this.loseEnemy(i, t);
    }
    this.finish(i, true);
  }

  /** Ends agent i's action and queues its result for the next snapshot. */
  private finish(i: number, success: boolean): void {
    this.doing[i] = Doing.NOTHING;
    const n = this.resultList.length;
    let r = this.resultPool[n];
    if (r === undefined) {
      r = [0, 0, 'success'];
      this.resultPool.push(r);
    }
    r[0] = this.ids === null ? i : this.ids[i]!;
    r[1] = this.seq[i]!;
    r[2] = success ? 'success' : 'failure';
    this.resultList.push(r);
    this.counters.results++;
  }

  private spawnEnemy(i: number, t: number): void {
    const angle = this.random() * 2 * Math.PI;
    const dist = 6 + this.random() * 14;
    this.ex[i] = this.x[i]! + Math.cos(angle) * dist;
    this.ey[i] = this.y[i]! + Math.sin(angle) * dist;
    this.enemyHp[i] = 100;
    this.enemyDps[i] = 3 + this.random() * 9;
    this.enemyVisible[i] = 1;
    // Slips out of sight after 4–20 s if not killed or outrun first.
    this.enemyNext[i] = t + 4 + this.random() * 16;
    this.counters.encounters++;
  }

  private loseEnemy(i: number, t: number): void {
    this.enemyVisible[i] = 0;
    this.enemyNext[i] = t + 2 + this.random() * 10;
  }

  /** Moves agent i up to `step` toward (px, py); true when it arrived. */
  private moveToward(i: number, px: number, py: number, step: number): boolean {
    const dx = px - this.x[i]!;
    const dy = py - this.y[i]!;
    const d = Math.sqrt(dx * dx + dy * dy);
    if (d <= step) {
      this.x[i] = px;
      this.y[i] = py;
      return true;
    }
    this.x[i] = this.x[i]! + (dx * step) / d;
    this.y[i] = this.y[i]! + (dy * step) / d;
    return false;
  }

  private moveAway(i: number, step: number): void {
    const dx = this.x[i]! - this.ex[i]!;
    const dy = this.y[i]! - this.ey[i]!;
    const d = Math.sqrt(dx * dx + dy * dy) || 1;
    this.x[i] = this.x[i]! + (dx * step) / d;
    this.y[i] = this.y[i]! + (dy * step) / d;
  }

  private waypointX(i: number, k: number): number {
    return this.homeX[i]! + RULES.waypointRadius * Math.cos(this.phase[i]! + (2 * Math.PI * k) / 3);
  }

  private waypointY(i: number, k: number): number {
    return this.homeY[i]! + RULES.waypointRadius * Math.sin(this.phase[i]! + (2 * Math.PI * k) / 3);
  }

  /** xorshift32: fast, seeded, good enough for a world. */
  private random(): number {
    let s = this.rng;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    this.rng = s >>> 0;
    return this.rng / 4294967296;
  }
}
