// Agent id styles of the load generator (`--ids`): how a game server names its agents. The service must
// not care, but its fast paths might: dense integers 0..N-1 (the default), sparse integers as a game with
// entity handles has them (k·1,000,000 + i for game server k), or strings ("npc-k-i").

import type { AgentId } from '../../src/client/index.js';

export type IdStyle = 'dense' | 'sparse' | 'string';

export const ID_STYLES: readonly IdStyle[] = ['dense', 'sparse', 'string'];

/** Sparse ids: game server k's agents start at k · SPARSE_STRIDE. */
export const SPARSE_STRIDE = 1_000_000;

/** The ids of `n` agents of game server `k` in `style`; null for dense (0..n-1: the world's own indexes). */
export function agentIds(style: IdStyle, k: number, n: number): AgentId[] | null {
  switch (style) {
    case 'dense':
      return null;
    case 'sparse':
      return Array.from({ length: n }, (_, i) => k * SPARSE_STRIDE + i);
    case 'string':
      return Array.from({ length: n }, (_, i) => `npc-${k}-${i}`);
  }
}
