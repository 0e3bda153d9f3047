// The arena's world: NPCs, raiders that appear at the edges, close in, shoot and hurt, walls with
// cover spots, and players. It is the load generator's world model (bench/load/world.ts) on one shared
// map: NPCs move, take cover, flee and regenerate; the actions Canopy decides run here until they finish.

import type { ActionDecision, ActionResult, CancelDecision, RowWriter } from '../../../src/client/index.js';
import { Grid } from './grid.js';
import { ACTIONS, KINDS, RULES, type Kind, type Wall } from './rules.js';

/** What a running action does to its NPC. */
const Doing = { NOTHING: 0, MOVE: 1, FLEE: 2, SHOOT: 3, CROUCH: 4, OTHER: 5 } as const;

/** Running totals the room reports and the tests check. */
export interface WorldCounters {
  started: number;
  results: number;
  cancels: number;
  /** Cancels for an action that had already finished here (its result was on the wire): see docs/integration.md. */
  staleCancels: number;
  /** Action names started, by name (chase, flee... are visible as moveTo-to-enemy and flee). */
  chases: number;
  /** Chases whose target is a player (Red Team hunts players). */
  playerChases: number;
  flees: number;
  shots: number;
  deaths: number;
  raidersKilled: number;
}

/** A player walking around the arena (the browser's arrow keys). */
export interface Player {
  x: number;
  y: number;
  vx: number;
  vy: number;
}

/** The arena: N NPCs with ids 0..N-1 (their kind by id, see {@link kindOf}), raiders, walls, players. */
export class ArenaWorld {
  readonly size: number;
  readonly width: number;
  readonly height: number;
  readonly walls: readonly Wall[];
  /** Cover spots: a point beside each wall end (`world.cover` for the take-cover subtree). */
  readonly cover: ReadonlyArray<readonly [number, number]>;
  readonly counters: WorldCounters = { started: 0, results: 0, cancels: 0, staleCancels: 0, chases: 0, playerChases: 0, flees: 0, shots: 0, deaths: 0, raidersKilled: 0 };
  readonly players = new Map<string, Player>();
  /** Game time, seconds. */
  time = 0;

  readonly x: Float64Array;
  readonly y: Float64Array;
  readonly hp: Float64Array;
  readonly kind: Uint8Array;
  /** The action code (ACTIONS index) of the NPC's movement slot and its hands slot, for the view. */
  readonly moveAction: Uint8Array;
  readonly handAction: Uint8Array;
  /** Target point of the current action (NaN: none), for the view's line. */
  readonly tx: Float64Array;
  readonly ty: Float64Array;
  private readonly homeX: Float64Array;
  private readonly homeY: Float64Array;
  private readonly lastHit: Float64Array;
  private readonly moveDoing: Uint8Array;
  private readonly moveSeq: Float64Array;
  private readonly moveSpeed: Float64Array;
  private readonly moveUntil: Float64Array;
  private readonly handDoing: Uint8Array;
  private readonly handSeq: Float64Array;
  private readonly handUntil: Float64Array;
  /** Per NPC, reused arrays sent as `pos`, `enemyPos`, `formationSlot`. */
  private readonly pos: Array<[number, number]> = [];
  private readonly enemyPos: Array<[number, number]> = [];
  private readonly slot: Array<[number, number]> = [];
  /** The nearest visible enemy of each NPC this tick (raider index, or -1 - player index; NONE). */
  private readonly enemyOf: Int32Array;
  private readonly enemyDist: Float64Array;

  /** Raiders: x, y, hp, alive; a fixed pool, respawned at the edges. */
  readonly rx: Float64Array;
  readonly ry: Float64Array;
  readonly rhp: Float64Array;
  readonly ralive: Uint8Array;
  private readonly rnext: Float64Array;
  private readonly grid: Grid;
  private readonly npcGrid: Grid;
  private readonly resultList: ActionResult[] = [];
  private rng: number;

  constructor(size: number, seed = 1) {
    this.size = size;
    this.rng = (seed >>> 0) || 1;
    // About 250 square metres per NPC: crowded enough to meet raiders, sparse enough to see.
    const side = Math.max(100, Math.round(Math.sqrt(size * 250)));
    this.width = Math.round(side * 1.6);
    this.height = side;
    const f = (): Float64Array => new Float64Array(size);
    this.x = f();
    this.y = f();
    this.hp = f();
    this.homeX = f();
    this.homeY = f();
    this.lastHit = f().fill(Number.NaN);
    this.tx = f().fill(Number.NaN);
    this.ty = f().fill(Number.NaN);
    this.kind = new Uint8Array(size);
    this.moveAction = new Uint8Array(size);
    this.handAction = new Uint8Array(size);
    this.moveDoing = new Uint8Array(size);
    this.moveSeq = f();
    this.moveSpeed = f();
    this.moveUntil = f();
    this.handDoing = new Uint8Array(size);
    this.handSeq = f();
    this.handUntil = f();
    this.enemyOf = new Int32Array(size);
    this.enemyDist = f();
    this.walls = this.makeWalls();
    this.cover = this.walls.flatMap((w) => coverOf(w));
    for (let i = 0; i < size; i++) {
      const k = kindOf(i);
      this.kind[i] = k;
      // Squad members live near their squad's first member (formation slots are around its home).
      const sq = k === KINDS.SQUAD ? squadIndex(i) : -1;
      // Escorts start around the centre, where players enter.
      const [hx, hy] =
        sq >= 0 && sq % 8 !== 0
          ? this.freeSpotNear(this.homeX[squadMember(sq - (sq % 8))]!, this.homeY[squadMember(sq - (sq % 8))]!)
          : k === KINDS.ESCORT
            ? this.freeSpotNear(this.width / 2, this.height / 2, 60)
            : this.freeSpot();
      this.homeX[i] = hx;
      this.homeY[i] = hy;
      this.x[i] = hx;
      this.y[i] = hy;
      this.hp[i] = 35 + this.random() * 65;
      this.pos.push([hx, hy]);
      this.enemyPos.push([0, 0]);
      this.slot.push([hx, hy]);
    }
    // Squads of 8 share an anchor: their formation slots sit around the first member's home.
    for (let i = 0; i < size; i++) {
      if (this.kind[i] !== KINDS.SQUAD) continue;
      const k = squadIndex(i) % 8;
      const leader = squadMember(squadIndex(i) - k);
      const s = this.slot[i]!;
      s[0] = this.clampX(this.homeX[leader]! + (k % 4) * 2.5 - 3.75);
      s[1] = this.clampY(this.homeY[leader]! + Math.floor(k / 4) * 2.5);
    }
    const raiders = Math.max(8, Math.round(size * RULES.raidersPerNpc));
    this.rx = new Float64Array(raiders);
    this.ry = new Float64Array(raiders);
    this.rhp = new Float64Array(raiders);
    this.ralive = new Uint8Array(raiders);
    this.rnext = new Float64Array(raiders);
    // First raids spread over the first seconds so the arena wakes up quickly but not in lockstep.
    for (let r = 0; r < raiders; r++) this.rnext[r] = 0.5 + this.random() * 6;
    this.grid = new Grid(this.width, this.height, RULES.sightRange, raiders);
    this.npcGrid = new Grid(this.width, this.height, RULES.sightRange, size);
  }

  /** Observation fields, in row order (hello.fields): what guard, follower and squad read of `self`. */
  static readonly FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos', 'pos', 'lastHit', 'formationSlot'] as const;

  /** Results of the last step: valid until the next step (the client encodes synchronously). */
  results(): readonly ActionResult[] {
    return this.resultList;
  }

  /** Advances the world by `dt` seconds: raiders, damage, regeneration, players, the NPCs' actions. */
  step(dt: number): void {
    const t = (this.time += dt);
    this.resultList.length = 0;
    this.stepPlayers(dt);
    this.stepRaiders(dt, t);
    const { x, y, hp } = this;
    for (let i = 0; i < this.size; i++) {
      this.findEnemy(i);
      if (hp[i]! <= 0) {
        // Killed: back home with full health; whatever it was doing is over.
        this.counters.deaths++;
        hp[i] = RULES.maxHp;
        x[i] = this.homeX[i]!;
        y[i] = this.homeY[i]!;
        this.lastHit[i] = Number.NaN;
        if (this.moveDoing[i] !== Doing.NOTHING) this.finishMove(i, false);
        if (this.handDoing[i] !== Doing.NOTHING) this.finishHand(i, false);
        continue;
      }
      if (hp[i]! < RULES.maxHp && !(t - this.lastHit[i]! < 1)) hp[i] = Math.min(RULES.maxHp, hp[i]! + RULES.regenPerSecond * dt);
      this.stepMove(i, dt, t);
      this.stepHands(i, t);
    }
  }

  /** Writes every NPC's observation row (fields in {@link ArenaWorld.FIELDS} order). */
  writeRows(rows: RowWriter): void {
    rows.begin();
    for (let i = 0; i < this.size; i++) {
      const row = rows.row(i);
      const p = this.pos[i]!;
      p[0] = round2(this.x[i]!);
      p[1] = round2(this.y[i]!);
      row[1] = Math.round(this.hp[i]!);
      const e = this.enemyOf[i]!;
      if (e !== NONE) {
        const ep = this.enemyPos[i]!;
        ep[0] = round2(this.enemyX(e));
        ep[1] = round2(this.enemyY(e));
        row[2] = true;
        row[3] = round2(this.enemyDist[i]!);
        row[4] = ep;
      } else {
        row[2] = false;
        row[3] = null;
        row[4] = null;
      }
      row[5] = p;
      row[6] = Number.isNaN(this.lastHit[i]!) ? null : round2(this.lastHit[i]!);
      row[7] = this.slot[i]!;
    }
  }

  /** The shared world state: the player the escorts follow, live raiders (squads' enemies), cover spots. */
  worldState(): Record<string, unknown> {
    const enemies: Array<[number, number]> = [];
    for (let r = 0; r < this.rx.length; r++) if (this.ralive[r] === 1) enemies.push([round2(this.rx[r]!), round2(this.ry[r]!)]);
    const first = this.players.values().next();
    // Without a player, the escorts follow the arena's centre (they gather there and wait).
    const player = first.done === true ? [this.width / 2, this.height / 2] : [round2(first.value.x), round2(first.value.y)];
    return { player, enemies, cover: this.cover };
  }

  /** Applies one `decisions`: cancels first (a tree that aborts one action and starts another sends both), then starts. */
  apply(actions: readonly ActionDecision[], cancels: readonly CancelDecision[]): void {
    // An action can be started and cancelled in the same decisions (its `until` was already true,
    // or the service ran several ticks since the last frame): it never starts here.
    let cancelledNew: Set<string> | undefined;
    for (const [id, seq] of cancels) {
      const i = this.index(id);
      if (i < 0) continue;
      this.counters.cancels++;
      if (this.moveDoing[i] !== Doing.NOTHING && this.moveSeq[i] === seq) this.stopMove(i);
      else if (this.handDoing[i] !== Doing.NOTHING && this.handSeq[i] === seq) this.stopHand(i);
      else if (actions.length > 0) (cancelledNew ??= new Set()).add(`${i}:${seq}`);
      else this.counters.staleCancels++;
    }
    for (const [id, seq, action, args] of actions) {
      const i = this.index(id);
      if (i < 0) continue;
      if (cancelledNew?.delete(`${i}:${seq}`) === true) continue;
      this.start(i, seq, action, args as Record<string, unknown>);
    }
    if (cancelledNew !== undefined) this.counters.staleCancels += cancelledNew.size;
  }

  /** Running actions, as `[id, seq]` (tests: every one of them ends exactly once). */
  running(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let i = 0; i < this.size; i++) {
      if (this.moveDoing[i] !== Doing.NOTHING) out.push([i, this.moveSeq[i]!]);
      if (this.handDoing[i] !== Doing.NOTHING) out.push([i, this.handSeq[i]!]);
    }
    return out;
  }

  /** Drops every running action without a result: the session that decided them is gone (a new one starts over). */
  abandonActions(): void {
    for (let i = 0; i < this.size; i++) {
      this.stopMove(i);
      this.stopHand(i);
    }
    this.resultList.length = 0;
  }

  // ---------------------------------------------------------------------------------------------

  private start(i: number, seq: number, action: string, a: Record<string, unknown>): void {
    const t = this.time;
    const code = ACTIONS.indexOf(action as (typeof ACTIONS)[number]);
    switch (action) {
      case 'aim':
      case 'face':
        return; // instant in the trees: no result is expected
      case 'moveTo':
      case 'flee':
      case 'crouch': {
        // A new movement replaces one the tree forgot to cancel: that one fails.
        if (this.moveDoing[i] !== Doing.NOTHING) this.finishMove(i, false);
        this.counters.started++;
        this.moveSeq[i] = seq;
        this.moveAction[i] = code;
        const to = point(a.to) ?? point(a.from) ?? point(a.facing);
        this.tx[i] = to ? to[0] : Number.NaN;
        this.ty[i] = to ? to[1] : Number.NaN;
        if (action === 'flee') {
          this.counters.flees++;
          this.moveDoing[i] = Doing.FLEE;
          this.moveUntil[i] = t + RULES.fleeSeconds;
        } else if (action === 'crouch') {
          this.moveDoing[i] = Doing.CROUCH; // until the tree's `until` cancels it
        } else if (to) {
          if (a.speed === 'run' && this.kind[i] === KINDS.GRUNT && this.enemyOf[i] !== NONE) {
            this.counters.chases++;
            if (this.enemyOf[i]! < 0) this.counters.playerChases++;
          }
          this.moveDoing[i] = Doing.MOVE;
          this.moveSpeed[i] = a.speed === 'sprint' ? RULES.sprintSpeed : a.speed === 'run' ? RULES.runSpeed : RULES.walkSpeed;
        } else if (typeof a.waypoint === 'number') {
          const [wx, wy] = this.waypoint(i, a.waypoint);
          this.tx[i] = wx;
          this.ty[i] = wy;
          this.moveDoing[i] = Doing.MOVE;
          this.moveSpeed[i] = RULES.walkSpeed;
        } else {
          this.moveDoing[i] = Doing.OTHER;
          this.moveUntil[i] = t + RULES.otherSeconds;
        }
        return;
      }
      default: {
        if (this.handDoing[i] !== Doing.NOTHING) this.finishHand(i, false);
        this.counters.started++;
        this.handSeq[i] = seq;
        this.handAction[i] = code < 0 ? 0 : code;
        const shooting = action === 'shoot' || action === 'fire';
        this.handDoing[i] = shooting ? Doing.SHOOT : Doing.OTHER;
        this.handUntil[i] = t + (shooting ? RULES.shootSeconds : RULES.otherSeconds);
        const at = point(a.at);
        if (at && this.moveDoing[i] === Doing.NOTHING) {
          this.tx[i] = at[0];
          this.ty[i] = at[1];
        }
        return;
      }
    }
  }

  private stepMove(i: number, dt: number, t: number): void {
    switch (this.moveDoing[i]) {
      case Doing.MOVE:
        if (this.moveToward(i, this.tx[i]!, this.ty[i]!, this.moveSpeed[i]! * dt)) this.finishMove(i, true);
        break;
      case Doing.FLEE: {
        const e = this.enemyOf[i]!;
        if (e !== NONE) this.moveAway(i, this.enemyX(e), this.enemyY(e), RULES.fleeSpeed * dt);
        else if (!Number.isNaN(this.tx[i]!)) this.moveAway(i, this.tx[i]!, this.ty[i]!, RULES.fleeSpeed * dt);
        if (t >= this.moveUntil[i]!) this.finishMove(i, true);
        break;
      }
      case Doing.OTHER:
        if (t >= this.moveUntil[i]!) this.finishMove(i, true);
        break;
      default:
        break;
    }
  }

  private stepHands(i: number, t: number): void {
    if (this.handDoing[i] === Doing.NOTHING || t < this.handUntil[i]!) return;
    if (this.handDoing[i] === Doing.SHOOT) {
      this.counters.shots++;
      const e = this.enemyOf[i]!;
      if (e === NONE || this.enemyDist[i]! > RULES.shotRange) {
        this.finishHand(i, false);
        return;
      }
      if (e >= 0) {
        this.rhp[e] = this.rhp[e]! - (20 + this.random() * 25);
        if (this.rhp[e]! <= 0) this.killRaider(e, t);
      }
    }
    this.finishHand(i, true);
  }

  private stepRaiders(dt: number, t: number): void {
    const grid = this.grid;
    grid.clear();
    this.npcGrid.clear();
    for (let i = 0; i < this.size; i++) this.npcGrid.add(i, this.x[i]!, this.y[i]!);
    for (let r = 0; r < this.rx.length; r++) {
      if (this.ralive[r] === 0) {
        if (t >= this.rnext[r]!) this.spawnRaider(r);
        else continue;
      }
      grid.add(r, this.rx[r]!, this.ry[r]!);
    }
    // Raiders close in on the nearest NPC they see and hurt it in range.
    for (let r = 0; r < this.rx.length; r++) {
      if (this.ralive[r] === 0) continue;
      const target = this.nearestNpcTo(this.rx[r]!, this.ry[r]!);
      if (target < 0) {
        // Nobody in sight: drift toward the centre.
        this.stepRaiderToward(r, this.width / 2, this.height / 2, dt);
        continue;
      }
      const d = Math.hypot(this.x[target]! - this.rx[r]!, this.y[target]! - this.ry[r]!);
      if (d > RULES.raiderHoldDistance) this.stepRaiderToward(r, this.x[target]!, this.y[target]!, dt);
      if (d <= RULES.raiderRange) {
        this.hp[target] = this.hp[target]! - RULES.raiderDps * dt;
        this.lastHit[target] = t;
      }
    }
  }

  private stepRaiderToward(r: number, px: number, py: number, dt: number): void {
    const dx = px - this.rx[r]!;
    const dy = py - this.ry[r]!;
    const d = Math.hypot(dx, dy) || 1;
    const s = Math.min(d, RULES.raiderSpeed * dt);
    this.rx[r] = this.rx[r]! + (dx * s) / d;
    this.ry[r] = this.ry[r]! + (dy * s) / d;
  }

  private nearestNpcTo(px: number, py: number): number {
    return this.npcGrid.nearest(px, py, this.x, this.y, RULES.sightRange);
  }

  private findEnemy(i: number): void {
    const px = this.x[i]!;
    const py = this.y[i]!;
    let best = NONE;
    let bestD: number = RULES.sightRange;
    const r = this.grid.nearest(px, py, this.rx, this.ry, RULES.sightRange);
    if (r >= 0) {
      best = r;
      bestD = Math.hypot(this.rx[r]! - px, this.ry[r]! - py);
    }
    // Red Team also hunts players.
    if (this.kind[i] === KINDS.GRUNT) {
      let p = 0;
      for (const pl of this.players.values()) {
        const d = Math.hypot(pl.x - px, pl.y - py);
        if (d < bestD) {
          best = -1 - p;
          bestD = d;
        }
        p++;
      }
    }
    this.enemyOf[i] = best;
    this.enemyDist[i] = bestD;
  }

  private enemyX(e: number): number {
    return e >= 0 ? this.rx[e]! : [...this.players.values()][-1 - e]!.x;
  }

  private enemyY(e: number): number {
    return e >= 0 ? this.ry[e]! : [...this.players.values()][-1 - e]!.y;
  }

  private stepPlayers(dt: number): void {
    for (const p of this.players.values()) {
      p.x = this.clampX(p.x + p.vx * RULES.playerSpeed * dt);
      p.y = this.clampY(p.y + p.vy * RULES.playerSpeed * dt);
    }
  }

  private spawnRaider(r: number): void {
    // Raiders appear 12–24 m from a random NPC (as the load generator's enemies do) and close in.
    const i = Math.floor(this.random() * this.size);
    const angle = this.random() * 2 * Math.PI;
    const d = 12 + this.random() * 12;
    this.rx[r] = this.clampX(this.x[i]! + Math.cos(angle) * d);
    this.ry[r] = this.clampY(this.y[i]! + Math.sin(angle) * d);
    this.rhp[r] = 100;
    this.ralive[r] = 1;
  }

  private killRaider(r: number, t: number): void {
    this.counters.raidersKilled++;
    this.ralive[r] = 0;
    this.rnext[r] = t + 2 + this.random() * 6;
  }

  private finishMove(i: number, success: boolean): void {
    this.pushResult(i, this.moveSeq[i]!, success);
    this.stopMove(i);
  }

  private finishHand(i: number, success: boolean): void {
    this.pushResult(i, this.handSeq[i]!, success);
    this.stopHand(i);
  }

  private stopMove(i: number): void {
    this.moveDoing[i] = Doing.NOTHING;
    this.moveAction[i] = 0;
    if (this.handDoing[i] === Doing.NOTHING) this.tx[i] = this.ty[i] = Number.NaN;
  }

  private stopHand(i: number): void {
    this.handDoing[i] = Doing.NOTHING;
    this.handAction[i] = 0;
  }

  private pushResult(i: number, seq: number, success: boolean): void {
    this.resultList.push([i, seq, success ? 'success' : 'failure']);
    this.counters.results++;
  }

  /** Moves NPC i up to `step` toward (px, py), sliding along walls; true when it arrived. */
  private moveToward(i: number, px: number, py: number, step: number): boolean {
    const dx = px - this.x[i]!;
    const dy = py - this.y[i]!;
    const d = Math.hypot(dx, dy);
    if (d <= step) {
      this.place(i, px, py);
      return true;
    }
    this.place(i, this.x[i]! + (dx * step) / d, this.y[i]! + (dy * step) / d);
    return false;
  }

  private moveAway(i: number, fx: number, fy: number, step: number): void {
    const dx = this.x[i]! - fx;
    const dy = this.y[i]! - fy;
    const d = Math.hypot(dx, dy) || 1;
    this.place(i, this.x[i]! + (dx * step) / d, this.y[i]! + (dy * step) / d);
  }

  /** Moves NPC i to (nx, ny), one axis at a time so walls block without trapping. */
  private place(i: number, nx: number, ny: number): void {
    nx = this.clampX(nx);
    ny = this.clampY(ny);
    if (!this.inWall(nx, this.y[i]!)) this.x[i] = nx;
    if (!this.inWall(this.x[i]!, ny)) this.y[i] = ny;
  }

  private inWall(px: number, py: number): boolean {
    for (const w of this.walls) if (px > w.x && px < w.x + w.w && py > w.y && py < w.y + w.h) return true;
    return false;
  }

  private waypoint(i: number, k: number): [number, number] {
    const a = i * 2.399 + (2 * Math.PI * k) / 3;
    return [this.clampX(this.homeX[i]! + RULES.waypointRadius * Math.cos(a)), this.clampY(this.homeY[i]! + RULES.waypointRadius * Math.sin(a))];
  }

  private makeWalls(): Wall[] {
    const walls: Wall[] = [];
    const count = Math.max(6, Math.round((this.width * this.height) / 4000));
    for (let k = 0; k < count; k++) {
      const long = 8 + this.random() * 16;
      const horizontal = this.random() < 0.5;
      walls.push({ x: this.random() * (this.width - 30) + 5, y: this.random() * (this.height - 30) + 5, w: horizontal ? long : 1.5, h: horizontal ? 1.5 : long });
    }
    return walls;
  }

  private freeSpot(): [number, number] {
    for (;;) {
      const px = 4 + this.random() * (this.width - 8);
      const py = 4 + this.random() * (this.height - 8);
      if (!this.inWall(px, py)) return [px, py];
    }
  }

  private freeSpotNear(cx: number, cy: number, spread = 16): [number, number] {
    for (let tries = 0; tries < 20; tries++) {
      const px = this.clampX(cx + (this.random() - 0.5) * spread);
      const py = this.clampY(cy + (this.random() - 0.5) * spread);
      if (!this.inWall(px, py)) return [px, py];
    }
    return this.freeSpot();
  }

  private clampX(v: number): number {
    return Math.min(this.width - 0.5, Math.max(0.5, v));
  }

  private clampY(v: number): number {
    return Math.min(this.height - 0.5, Math.max(0.5, v));
  }

  private index(id: unknown): number {
    return typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < this.size ? id : -1;
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

const NONE = 0x7fffffff;

/** The kind of NPC `i`: of every 10, 6 Red Team grunts (guard), 1 Red Team escort (follower), 3 Blue Team squad members. */
export function kindOf(i: number): Kind {
  const k = i % 10;
  return k < 6 ? KINDS.GRUNT : k === 6 ? KINDS.ESCORT : KINDS.SQUAD;
}

/** The position of squad member `i` among all squad members (squads are consecutive runs of 8). */
function squadIndex(i: number): number {
  return Math.floor(i / 10) * 3 + (i % 10) - 7;
}

/** The NPC id of squad member number `s`. */
function squadMember(s: number): number {
  return Math.floor(s / 3) * 10 + 7 + (s % 3);
}

/** NPC `i`'s tree and label (`Red Team/Grunts/3`): the hierarchy the inspector groups by. */
export function describeNpc(i: number): { tree: string; label: string } {
  const k = kindOf(i);
  if (k === KINDS.GRUNT) return { tree: 'guard', label: `Red Team/Grunts/${Math.floor(i / 10) * 6 + (i % 10)}` };
  if (k === KINDS.ESCORT) return { tree: 'follower', label: `Red Team/Escorts/${Math.floor(i / 10)}` };
  const s = squadIndex(i);
  return { tree: 'squad', label: `Blue Team/Squad ${Math.floor(s / 8) + 1}/${s % 8}` };
}

function coverOf(w: Wall): Array<[number, number]> {
  // Behind both ends of the wall.
  return w.w > w.h
    ? [[round2(w.x - 1.5), round2(w.y + w.h / 2)], [round2(w.x + w.w + 1.5), round2(w.y + w.h / 2)]]
    : [[round2(w.x + w.w / 2), round2(w.y - 1.5)], [round2(w.x + w.w / 2), round2(w.y + w.h + 1.5)]];
}

function point(v: unknown): [number, number] | undefined {
  return Array.isArray(v) && typeof v[0] === 'number' && typeof v[1] === 'number' ? [v[0], v[1]] : undefined;
}

function round2(v: number): number {
  return Math.round(v * 100) / 100;
}
