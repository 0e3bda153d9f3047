// The agent pool: where agents live and get ticked. The session layer creates one with createAgentPool and
// talks only to the AgentPool interface; worker threads (or the calling thread, inline) host the agents.

import { InlinePool } from './inline.js';
import { loadTrees } from './load.js';
import type { AgentPool, PoolOptions } from './types.js';
import { WorkerPool } from './worker-pool.js';
import { MAX_HOSTS } from './router.js';

// The contract (types.ts) and both implementations; each is documented where it is defined.
export type { AgentListing, AgentPool, AgentView, Decisions, EntryError, FrameTick, Observer, PoolLogEvent, PoolLogger, PoolOptions, ReloadOutcome, ReloadPolicy, SessionExport, SpawnEntry, TickParts, UnreadFrame, WorkerStats } from './types.js';
export { DEFAULT_SESSION_AFFINITY, MIN_STAGED_ROWS, PoolUsageError } from './router.js';
export { LOG_LINES_PER_TICK } from './logs.js';
export { frameFields } from './decisions.js';
export { InlinePool } from './inline.js';
export { WorkerPool } from './worker-pool.js';

/**
 * Builds a pool: `workers: 0` → InlinePool (agents ticked on the calling thread); `workers ≥ 1` → WorkerPool.
 * The main thread loads plugins and trees first (spawns are checked against them) and rejects with the
 * loader's error text if that fails; then await `ready()` for the workers.
 */
export async function createAgentPool(opts: PoolOptions): Promise<AgentPool> {
  if (!Number.isInteger(opts.workers) || opts.workers < 0 || opts.workers > MAX_HOSTS) {
    throw new RangeError(`workers: expected an integer from 0 to ${MAX_HOSTS}, got ${opts.workers}`);
  }
  let library = opts.library;
  if (library === undefined) {
    const loaded = await loadTrees(opts.trees, opts.plugins);
    if (!loaded.ok) throw new Error(loaded.error);
    library = loaded.library;
  }
  if (opts.workers === 0) return new InlinePool(library, opts.logger, opts.eluWindowMs);
  return new WorkerPool(opts, library, opts.logger);
}

/**
 * Test hook: makes worker `worker` of a WorkerPool crash and resolves once its replacement is ready and, with
 * recovery, restored. `throw`: an uncaught error in the thread, once it has read the orders posted before;
 * `terminate`: the thread is stopped from outside at once, wherever it is (an out-of-memory kill, say).
 * Not for production code.
 */
export function crashWorkerForTests(pool: AgentPool, worker: number, how: 'throw' | 'terminate' = 'throw'): Promise<void> {
  if (!(pool instanceof WorkerPool)) throw new TypeError('crashWorkerForTests: not a worker pool');
  return pool.crashForTests(worker, how);
}
