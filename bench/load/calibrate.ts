// A fixed piece of single-threaded work, timed before each run: on a shared machine (a cloud VM, a CI
// runner) the same code runs 20–40 % slower at some hours than at others, and this number says which
// hour a figure came from. Lower is faster; compare it between runs before comparing their figures.

import { RowWriter } from '../../src/client/index.js';
import { encode } from '../../src/protocol/index.js';
import { FIELDS, GameWorld } from './world.js';

/**
 * Milliseconds to simulate, write and encode 20 ticks of 10,000 agents (the generator's own work),
 * best of 6 after 4 warm-up rounds (other work on the machine only ever slows a round down).
 */
export function referenceWorkMs(): number {
  const world = new GameWorld(10_000, 42);
  const rows = new RowWriter(FIELDS);
  let best = Infinity;
  let bytes = 0;
  // The first rounds also compile the code (JIT): they are not counted.
  for (let round = -4; round < 6; round++) {
    const started = performance.now();
    for (let k = 0; k < 20; k++) {
      world.step(0.05);
      world.writeRows(rows);
      bytes += encode({ t: 'snapshot', tick: k, time: world.time, agents: rows.rows(), results: world.results() }).length;
    }
    if (round >= 0) best = Math.min(best, performance.now() - started);
  }
  // `bytes` keeps the encoding from being optimised away.
  return bytes > 0 ? Math.round(best * 10) / 10 : best;
}
