// behaviortree 2.1 under test: one shared node tree, one BehaviorTree (its own running path) and one
// blackboard per agent, the library's documented use; tasks read the shared world.

import { createRequire } from 'node:module';
import type behaviortreeModule from 'behaviortree';
import { FLEE_TICKS, GUARD_ACTIONS, HURT_BELOW, MOVE_TICKS, NEAR_BELOW, guardCounts, type Implementation, type Population } from './population.js';
import type { Observation, World } from './world.js';

// Through require: Node's ESM import sees only a default export, and bundlers (vitest) pick the
// package's "module" build, whose default export is another thing; its CommonJS main is the same everywhere.
const behaviortree = createRequire(import.meta.url)('behaviortree') as typeof behaviortreeModule;
const { BehaviorTree, Selector, Sequence, Task, SUCCESS, FAILURE, RUNNING } = behaviortree;

/** An agent's blackboard: its observation and the ticks at which its running long actions complete. */
class Blackboard {
  fleeUntil = 0;
  moveUntil = 0;
  constructor(readonly self: Observation) {}
}

class BehaviortreePopulation implements Population {
  private readonly trees: Array<{ step(): void }>;
  private readonly issued = new Int32Array(GUARD_ACTIONS.length);
  private now = 0;

  constructor(world: World) {
    const counts = this.issued;
    const condition = (test: (b: Blackboard) => boolean) => new Task<Blackboard>({ run: (b) => (test(b) ? SUCCESS : FAILURE) });
    const instant = (k: number) =>
      new Task<Blackboard>({
        run: () => {
          counts[k]!++;
          return SUCCESS;
        },
      });
    // `start` runs when the task is entered, not when it is resumed: that is where the action is issued.
    const flee = new Task<Blackboard>({
      start: (b) => {
        counts[0]!++;
        b.fleeUntil = this.now + FLEE_TICKS;
      },
      run: (b) => (this.now < b.fleeUntil ? RUNNING : SUCCESS),
    });
    const move = new Task<Blackboard>({
      start: (b) => {
        counts[4]!++;
        b.moveUntil = this.now + MOVE_TICKS;
      },
      run: (b) => (this.now < b.moveUntil ? RUNNING : SUCCESS),
    });
    const visible = (b: Blackboard) => b.self.enemyVisible;
    const tree = new Selector({
      nodes: [
        new Sequence({ nodes: [condition((b) => b.self.hp < HURT_BELOW), flee] }),
        new Sequence({ nodes: [condition(visible), condition((b) => b.self.enemyDist < NEAR_BELOW), instant(1)] }),
        new Sequence({ nodes: [condition(visible), instant(2)] }),
        new Sequence({ nodes: [instant(3), move] }),
      ],
    });
    this.trees = world.observations.map((o) => new BehaviorTree({ tree, blackboard: new Blackboard(o) }));
  }

  tick(tick: number): void {
    this.now = tick;
    const trees = this.trees;
    for (let i = 0; i < trees.length; i++) trees[i]!.step();
  }

  counts() {
    return guardCounts(this.issued);
  }
}

export function behaviortreeGuard(): Implementation {
  return { name: 'behaviortree', description: 'behaviortree 2.1, guard tree, shared nodes, one BehaviorTree per agent', spawn: (world) => new BehaviortreePopulation(world) };
}
