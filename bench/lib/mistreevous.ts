// mistreevous 4 under test: the guard tree as a JSON definition, one BehaviourTree per agent (its
// idiomatic use), conditions and actions as methods of the agent object reading the shared world.

import { BehaviourTree, State } from 'mistreevous';
import { FLEE_TICKS, GUARD_ACTIONS, HURT_BELOW, MOVE_TICKS, NEAR_BELOW, guardCounts, type Implementation, type Population } from './population.js';
import type { Observation, World } from './world.js';

// Mutable JSON as mistreevous' RootNodeDefinition wants it (the type is not exported by name).
const DEFINITION: ConstructorParameters<typeof BehaviourTree>[0] = {
  type: 'root',
  child: {
    type: 'selector',
    children: [
      { type: 'sequence', children: [{ type: 'condition', call: 'IsHurt' }, { type: 'action', call: 'Flee' }] },
      { type: 'sequence', children: [{ type: 'condition', call: 'EnemyVisible' }, { type: 'condition', call: 'EnemyNear' }, { type: 'action', call: 'Attack' }] },
      { type: 'sequence', children: [{ type: 'condition', call: 'EnemyVisible' }, { type: 'action', call: 'Chase' }] },
      { type: 'sequence', children: [{ type: 'action', call: 'PickWaypoint' }, { type: 'action', call: 'MoveToWaypoint' }] },
    ],
  },
};

const [FLEE, ATTACK, CHASE, PICK, MOVE] = GUARD_ACTIONS.map((_, k) => k) as [number, number, number, number, number];

/** What the population shares with its agents: the tick being played and the action counters. */
interface Shared {
  tick: number;
  readonly counts: Int32Array;
}

/**
 * The agent object mistreevous calls into. An action that takes time is called every step while it
 * runs (mistreevous' WalkToPosition pattern): it issues on the first call and succeeds when its tick comes.
 */
class GuardAgent {
  /** Tick at which the running long action completes; -1 when none runs. */
  private fleeUntil = -1;
  private moveUntil = -1;

  constructor(
    private readonly self: Observation,
    private readonly shared: Shared,
  ) {}

  IsHurt(): boolean {
    return this.self.hp < HURT_BELOW;
  }
  EnemyVisible(): boolean {
    return this.self.enemyVisible;
  }
  EnemyNear(): boolean {
    return this.self.enemyDist < NEAR_BELOW;
  }
  Flee(): State {
    if (this.fleeUntil < 0) {
      this.shared.counts[FLEE]!++;
      this.fleeUntil = this.shared.tick + FLEE_TICKS;
      return State.RUNNING;
    }
    if (this.shared.tick < this.fleeUntil) return State.RUNNING;
    this.fleeUntil = -1;
    return State.SUCCEEDED;
  }
  Attack(): State {
    this.shared.counts[ATTACK]!++;
    return State.SUCCEEDED;
  }
  Chase(): State {
    this.shared.counts[CHASE]!++;
    return State.SUCCEEDED;
  }
  PickWaypoint(): State {
    this.shared.counts[PICK]!++;
    return State.SUCCEEDED;
  }
  MoveToWaypoint(): State {
    if (this.moveUntil < 0) {
      this.shared.counts[MOVE]!++;
      this.moveUntil = this.shared.tick + MOVE_TICKS;
      return State.RUNNING;
    }
    if (this.shared.tick < this.moveUntil) return State.RUNNING;
    this.moveUntil = -1;
    return State.SUCCEEDED;
  }
}

class MistreevousPopulation implements Population {
  private readonly trees: BehaviourTree[];
  private readonly shared: Shared = { tick: 0, counts: new Int32Array(GUARD_ACTIONS.length) };

  constructor(world: World) {
    // mistreevous builds (and validates) a tree per agent; it has no shared compiled form.
    this.trees = world.observations.map((o) => new BehaviourTree(DEFINITION, new GuardAgent(o, this.shared) as unknown as Record<string, unknown>));
  }

  tick(tick: number): void {
    this.shared.tick = tick;
    const trees = this.trees;
    for (let i = 0; i < trees.length; i++) trees[i]!.step();
  }

  counts() {
    return guardCounts(this.shared.counts);
  }
}

export function mistreevousGuard(): Implementation {
  return { name: 'mistreevous', description: 'mistreevous 4.3, guard tree, one BehaviourTree per agent', spawn: (world) => new MistreevousPopulation(world) };
}
