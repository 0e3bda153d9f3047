// The engine benchmark compares like with like: Canopy, mistreevous, behaviortree and the hand-written
// loop must issue the same actions for the same seeded world. A correctness test, never a speed one.

import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GUARD_ACTIONS, type DecisionCounts } from '../../bench/lib/population.js';
import { GUARD_IMPLEMENTATIONS, IMPLEMENTATIONS, decisionCounts } from '../../bench/lib/run.js';

const AGENTS = 200;
const TICKS = 50;

/** The names among `names` that were never issued: a comparison is only as good as the branches it covers. */
function neverIssued(counts: DecisionCounts, names: readonly string[]): string[] {
  return names.filter((n) => !((counts[n] ?? 0) > 0));
}

describe('guard tree equivalence', () => {
  const implementations = GUARD_IMPLEMENTATIONS.map((name) => IMPLEMENTATIONS[name]());

  it('every implementation issues the same actions, per name, as Canopy', () => {
    const results = implementations.map((impl) => ({ name: impl.name, counts: decisionCounts(impl, AGENTS, TICKS) }));
    const canopy = results[0]!.counts;
    expect(neverIssued(canopy, GUARD_ACTIONS)).toEqual([]);
    expect(results).toEqual(results.map((r) => ({ name: r.name, counts: canopy })));
  });

  it('they agree for any seed, and a population is deterministic', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (seed) => {
        const counts = implementations.map((impl) => decisionCounts(impl, 50, TICKS, seed));
        expect(counts).toEqual(counts.map(() => counts[0]));
        expect(decisionCounts(implementations[0]!, 50, TICKS, seed)).toEqual(counts[0]);
      }),
      { numRuns: 10 },
    );
  });
});

describe('large bench tree', () => {
  it('validates, compiles and runs without stopping an agent, issuing every kind of action it has', () => {
    // The bench game throws if an agent is stopped by an error.
    const counts = decisionCounts(IMPLEMENTATIONS['canopy-large'](), AGENTS, TICKS);
    expect(neverIssued(counts, ['flee', 'attack', 'taunt', 'takeCover', 'aim', 'shoot', 'chase', 'heal', 'announce', 'pickWaypoint', 'moveToWaypoint'])).toEqual([]);
  });
});

describe('shooter bench tree', () => {
  it('validates, compiles and runs without stopping an agent, reaching its subtrees', () => {
    const counts = decisionCounts(IMPLEMENTATIONS['canopy-shooter'](), AGENTS, TICKS);
    // survive (flee, heal), combat (melee, aim, shoot, strafe, throwGrenade), search (lookLeft), patrol (moveTo).
    expect(neverIssued(counts, ['flee', 'heal', 'melee', 'aim', 'shoot', 'strafe', 'throwGrenade', 'lookLeft', 'moveTo', 'callout'])).toEqual([]);
  });
});
