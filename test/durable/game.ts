// A scripted lockstep game for the durable-session tests and the failover bench: its inputs at each tick depend
// only on the tick and on the decisions it got (walk actions succeed one tick later when their seq is even), so
// two runs that get the same decisions send the same inputs.

import type { CanopyClient, Decisions } from '../../src/client/index.js';

export const TREES = {
  // Random draws, timers and actions awaiting the game's results: all of it must continue exactly.
  mixed: {
    blackboard: { mood: 1 },
    root: {
      type: 'random',
      children: [
        { type: 'action', action: 'shout', args: { x: 'self.x', mood: 'bb.mood', r: 'rand()' }, instant: true },
        { type: 'action', action: 'walk', args: { x: 'self.x' } },
        { type: 'sequence', children: [{ type: 'wait', seconds: [0.1, 0.4] }, { type: 'action', action: 'ring', args: { r: 'rand()' }, instant: true }] },
      ],
    },
  },
};

export const FIELDS = ['x'];

/** The game's side of one session. */
export class Game {
  readonly agents: number;
  private results: Array<[number, number, 'success']> = [];
  /** Every tick's decisions, by tick. */
  readonly decisions = new Map<number, Decisions>();
  /** Walk actions issued and not yet completed (id:seq), and those completed by a result. */
  readonly open = new Set<string>();

  constructor(agents: number) {
    this.agents = agents;
  }

  async spawn(client: CanopyClient): Promise<void> {
    const agents = Array.from({ length: this.agents }, (_, id) => ({ id, tree: 'mixed', seed: 1000 + id }));
    const out = await client.spawn(agents);
    if (out.ids.length !== this.agents) throw new Error(`spawned ${out.ids.length} of ${this.agents}`);
  }

  /** Plays one lockstep tick: rows, the results owed, and at tick 5 a blackboard write. */
  async tick(client: CanopyClient, tick: number): Promise<Decisions> {
    if (tick === 5) client.setBlackboard([[0, { mood: 7 }], [4, { mood: 9 }]]);
    const rows = Array.from({ length: this.agents }, (_, id): [number, number] => [id, tick * 100 + id]);
    const results = this.results;
    for (const [id, seq] of results) this.open.delete(`${id}:${seq}`);
    const d = await client.lockstep({ tick, time: tick * 0.05, agents: rows, ...(results.length > 0 ? { results } : {}) });
    this.decisions.set(tick, d);
    const walks = d.actions.filter((a) => a[2] === 'walk');
    for (const a of walks) this.open.add(`${a[0]}:${a[1]}`);
    this.results = walks.filter((a) => a[1] % 2 === 0).map((a) => [a[0] as number, a[1], 'success']);
    return d;
  }
}
