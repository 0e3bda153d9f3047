// The benchmark's world: one observation per agent, perturbed every tick by a fixed-seed generator,
// so every implementation under test sees exactly the same sequence of values.

import { mulberry32Next, mulberry32Value } from '../../src/bt/rng.js';

/** What one agent observes (`self` in Canopy expressions). */
export interface Observation {
  hp: number;
  enemyVisible: boolean;
  enemyDist: number;
}

export const DEFAULT_SEED = 20_240_601;

/**
 * The world of `size` agents. Its values live twice: in typed arrays (what the hand-written loop
 * reads) and in one plain object per agent, mutated in place (what the service does with positional
 * rows, and what the tree libraries read). perturb() writes both.
 */
export class World {
  readonly size: number;
  readonly hp: Float64Array;
  readonly enemyVisible: Uint8Array;
  readonly enemyDist: Float64Array;
  readonly observations: Observation[];
  private rng: number;

  constructor(size: number, seed = DEFAULT_SEED) {
    this.size = size;
    this.rng = seed >>> 0;
    this.hp = new Float64Array(size);
    this.enemyVisible = new Uint8Array(size);
    this.enemyDist = new Float64Array(size);
    this.observations = [];
    for (let i = 0; i < size; i++) {
      this.hp[i] = this.random() * 100;
      this.enemyVisible[i] = this.random() < 0.5 ? 1 : 0;
      this.enemyDist[i] = this.random() * 20;
      this.observations.push({ hp: this.hp[i]!, enemyVisible: this.enemyVisible[i] === 1, enemyDist: this.enemyDist[i]! });
    }
  }

  /**
   * One tick of the world, per agent: hp re-rolled (uniform 0–100) with probability 0.1,
   * enemyVisible re-rolled with probability 0.5, enemyDist uniform 0–20. The draws never depend on
   * what the agents decided, so every implementation gets the same world.
   */
  perturb(): void {
    const { hp, enemyVisible, enemyDist, observations } = this;
    for (let i = 0; i < this.size; i++) {
      if (this.random() < 0.1) hp[i] = this.random() * 100;
      if (this.random() < 0.5) enemyVisible[i] = this.random() < 0.5 ? 1 : 0;
      enemyDist[i] = this.random() * 20;
      const o = observations[i]!;
      o.hp = hp[i]!;
      o.enemyVisible = enemyVisible[i] === 1;
      o.enemyDist = enemyDist[i]!;
    }
  }

  private random(): number {
    this.rng = mulberry32Next(this.rng);
    return mulberry32Value(this.rng);
  }
}
