// What every implementation under test provides: agents spawned over a World, ticked once per tick,
// counting the actions they issue, so implementations can be compared for speed and for sameness.

import type { World } from './world.js';

export type ImplementationName = 'canopy' | 'mistreevous' | 'behaviortree' | 'ceiling' | 'ceiling-io' | 'canopy-large' | 'canopy-untraced' | 'canopy-large-untraced' | 'canopy-shooter';

/** Actions issued so far, per action name. */
export type DecisionCounts = Record<string, number>;

/** The agents of one implementation over one world. */
export interface Population {
  /** Ticks every agent once; `tick` counts from 0 and the world was perturbed just before. */
  tick(tick: number): void;
  counts(): DecisionCounts;
}

export interface Implementation {
  readonly name: ImplementationName;
  /** One line for the report. */
  readonly description: string;
  /** Creates one agent per observation of `world` (memory is measured around this call alone). */
  spawn(world: World): Population;
}

/** Tree time per tick, seconds (20 Hz, the service's default rate). */
export const TICK_SECONDS = 0.05;

// The reference "guard" tree, the same in every implementation: a selector of four sequences.
/** flee: `self.hp < HURT_BELOW`, then `flee`, which completes FLEE_TICKS ticks after it is issued. */
export const HURT_BELOW = 30;
export const FLEE_TICKS = 3;
/** attack: `enemyVisible`, `enemyDist < NEAR_BELOW`, then the instant `attack`. */
export const NEAR_BELOW = 5;
/** chase: `enemyVisible`, then the instant `chase`. patrol: the instant `pickWaypoint`, then `moveToWaypoint` (MOVE_TICKS ticks). */
export const MOVE_TICKS = 5;
export const GUARD_ACTIONS = ['flee', 'attack', 'chase', 'pickWaypoint', 'moveToWaypoint'] as const;

/** Counts as a record with the guard tree's action names, in a fixed order. */
export function guardCounts(values: ArrayLike<number>): DecisionCounts {
  const out: DecisionCounts = {};
  GUARD_ACTIONS.forEach((name, k) => (out[name] = values[k]!));
  return out;
}

/** True when both have the same names with the same counts (names with count 0 may be missing). */
export function sameCounts(a: DecisionCounts, b: DecisionCounts): boolean {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const n of names) if ((a[n] ?? 0) !== (b[n] ?? 0)) return false;
  return true;
}
