// The ceiling: the guard tree written by hand as a state machine over typed arrays, reading the
// world's typed arrays. No tree engine can beat it; it shows how close one gets.

import { FLEE_TICKS, GUARD_ACTIONS, HURT_BELOW, MOVE_TICKS, NEAR_BELOW, guardCounts, type Implementation, type Population } from './population.js';
import type { World } from './world.js';

const [FLEE, ATTACK, CHASE, PICK, MOVE] = GUARD_ACTIONS.map((_, k) => k) as [number, number, number, number, number];

/** What an agent is doing between ticks: nothing running, or waiting on flee / moveToWaypoint. */
const IDLE = 0;
const FLEEING = 1;
const MOVING = 2;

class CeilingPopulation implements Population {
  private readonly world: World;
  private readonly phase: Uint8Array;
  /** Tick at which the running action completes. */
  private readonly until: Int32Array;
  /** Last action seq issued per agent, as the protocol numbers actions. */
  private readonly seq: Int32Array;
  /**
   * This tick's decisions as [agent, seq, action] triples: what a game server must be told, so the
   * ceiling does the same essential work as an engine handing decisions to a sink.
   */
  private readonly decisions: Int32Array;
  private decided = 0;
  private readonly issued = new Float64Array(GUARD_ACTIONS.length);

  constructor(world: World) {
    this.world = world;
    this.phase = new Uint8Array(world.size);
    this.until = new Int32Array(world.size);
    this.seq = new Int32Array(world.size);
    // At most two actions per agent and tick (pickWaypoint + moveToWaypoint).
    this.decisions = new Int32Array(world.size * 2 * 3);
  }

  private issue(agent: number, action: number): void {
    const d = this.decided;
    this.decisions[d] = agent;
    this.decisions[d + 1] = ++this.seq[agent]!;
    this.decisions[d + 2] = action;
    this.decided = d + 3;
  }

  tick(tick: number): void {
    const { phase, until } = this;
    const { hp, enemyVisible, enemyDist } = this.world;
    this.decided = 0;
    for (let i = 0; i < phase.length; i++) {
      // A running action is resumed (no condition re-checked); its success ends the root this tick.
      if (phase[i] !== IDLE) {
        if (tick >= until[i]!) phase[i] = IDLE;
        continue;
      }
      if (hp[i]! < HURT_BELOW) {
        this.issue(i, FLEE);
        phase[i] = FLEEING;
        until[i] = tick + FLEE_TICKS;
      } else if (enemyVisible[i] === 1 && enemyDist[i]! < NEAR_BELOW) {
        this.issue(i, ATTACK);
      } else if (enemyVisible[i] === 1) {
        this.issue(i, CHASE);
      } else {
        this.issue(i, PICK);
        this.issue(i, MOVE);
        phase[i] = MOVING;
        until[i] = tick + MOVE_TICKS;
      }
    }
    // The game's side: count what was decided.
    const { decisions, issued: counts } = this;
    for (let d = 0; d < this.decided; d += 3) counts[decisions[d + 2]!]!++;
  }

  counts() {
    return guardCounts(this.issued);
  }
}

export function ceilingGuard(): Implementation {
  return { name: 'ceiling', description: 'hand-written typed-array state machine, guard tree; decisions as (agent, seq, action) triples', spawn: (world) => new CeilingPopulation(world) };
}

/**
 * The same hand-written state machine with the engine's inputs and outputs: it reads each agent's
 * observation object (what the service hands the engine after applying positional rows) and emits
 * protocol-shaped `[id, seq, action, args]` tuples into a reused list, as DecisionBuffer does.
 * It shows what a tree engine's input/output contract costs before any tree work (`ceiling-io` in the JSON).
 */
class ObjectCeilingPopulation implements Population {
  private readonly world: World;
  private readonly phase: Uint8Array;
  private readonly until: Int32Array;
  private readonly seq: Int32Array;
  private readonly decisions: Array<[number, number, string, Readonly<Record<string, unknown>>]> = [];
  private readonly issued = new Map<string, number>(GUARD_ACTIONS.map((n) => [n, 0]));

  constructor(world: World) {
    this.world = world;
    this.phase = new Uint8Array(world.size);
    this.until = new Int32Array(world.size);
    this.seq = new Int32Array(world.size);
  }

  private issue(agent: number, action: string): void {
    this.decisions.push([agent, ++this.seq[agent]!, action, NO_ARGS]);
  }

  tick(tick: number): void {
    const { phase, until, decisions } = this;
    const observations = this.world.observations;
    decisions.length = 0;
    for (let i = 0; i < phase.length; i++) {
      if (phase[i] !== IDLE) {
        if (tick >= until[i]!) phase[i] = IDLE;
        continue;
      }
      const o = observations[i]!;
      if (o.hp < HURT_BELOW) {
        this.issue(i, GUARD_ACTIONS[FLEE]!);
        phase[i] = FLEEING;
        until[i] = tick + FLEE_TICKS;
      } else if (o.enemyVisible && o.enemyDist < NEAR_BELOW) {
        this.issue(i, GUARD_ACTIONS[ATTACK]!);
      } else if (o.enemyVisible) {
        this.issue(i, GUARD_ACTIONS[CHASE]!);
      } else {
        this.issue(i, GUARD_ACTIONS[PICK]!);
        this.issue(i, GUARD_ACTIONS[MOVE]!);
        phase[i] = MOVING;
        until[i] = tick + MOVE_TICKS;
      }
    }
    for (let d = 0; d < decisions.length; d++) {
      const name = decisions[d]![2];
      this.issued.set(name, this.issued.get(name)! + 1);
    }
  }

  counts() {
    return guardCounts(GUARD_ACTIONS.map((n) => this.issued.get(n)!));
  }
}

const NO_ARGS: Readonly<Record<string, unknown>> = Object.freeze({});

export function ceilingIoGuard(): Implementation {
  return {
    name: 'ceiling-io',
    description: 'the same hand-written loop reading observation objects and emitting [id, seq, action, args] tuples (engine I/O)',
    spawn: (world) => new ObjectCeilingPopulation(world),
  };
}
