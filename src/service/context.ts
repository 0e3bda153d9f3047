// What the service's fastify plugins share: settings, the pool, sessions, metrics, the loaded trees
// and whether the service is starting, ready or draining. Built once by createServer.

import type { Logger } from 'pino';
import type { TreeReads } from '../protocol/index.js';
import type { Config } from './config.js';
import type { Metrics } from './metrics.js';
import { DEFAULT_SESSION_AFFINITY, MIN_STAGED_ROWS, type AgentPool } from './pool/index.js';
import type { Recordings } from './recording/recordings.js';
import type { SessionRegistry } from './sessions/registry.js';
import type { Durability } from './durable/durability.js';

/** Tuning that has no environment variable: defaults suit production, tests shrink them. */
export interface Tuning {
  /** WebSocket ping period; a socket that has not answered the previous ping is dropped. */
  readonly pingIntervalMs: number;
  /** Unsent bytes above which fixed-mode decisions are merged and lockstep reading pauses. */
  readonly softBufferBytes: number;
  /** Unsent bytes above which the client is told goodbye ('slow consumer') and dropped. */
  readonly hardBufferBytes: number;
  /** Invalid frames tolerated per window before goodbye ('too many invalid messages'). */
  readonly abuseLimit: number;
  readonly abuseWindowMs: number;
  /** `goodbye.retryAfterMs` at shutdown. */
  readonly retryAfterMs: number;
  /** A worker thread that leaves a tick unanswered this long is stuck and replaced (0: never). */
  readonly workerStallMs: number;
  /** After a goodbye, how long a socket may drain nothing before it is destroyed (default 2 s). */
  readonly closeTimeoutMs?: number;
  /** Raw bytes of records gathered before a recording block is compressed and written. */
  readonly recordBlockBytes: number;
  /** Longest validation of one posted tree; then the validation thread is replaced and the request answered 422. */
  readonly validateTimeLimitMs: number;
  /** Posted trees waiting behind the one being validated; beyond it requests are answered 429. */
  readonly validateQueue: number;
  /** Crash recovery: session time between two checkpoints of a worker's agents (PoolOptions.checkpointMs; negative: off). */
  readonly workerCheckpointMs: number;
  /** Start-up warm-up (warmup.ts): agents spawned, ticked and freed in each of 3 rounds before /readyz turns 200; 0: none. */
  readonly warmupAgents: number;
  /** Whether the warm-up also drives a session through a loopback WebSocket (the connection and session layer). */
  readonly warmupSession: boolean;
  /** Sessions kept on one worker (PoolOptions.sessionAffinity); 0: every session spread over the workers. */
  readonly sessionAffinity: number;
  /** Lockstep snapshots of fewer rows are read on the main thread, not staged on the workers (PoolOptions.minStagedRows). */
  readonly minStagedRows: number;
  /** Added to the nice value of V8's helper threads after a spawn of 1,000 agents or more (spawn-priority.ts); 0: never. */
  readonly spawnHelperNice: number;
  /** How long after the last such spawn they keep it, ms. */
  readonly spawnHelperHoldMs: number;
}

export const DEFAULT_TUNING: Tuning = {
  pingIntervalMs: 15_000,
  softBufferBytes: 4 * 1024 * 1024,
  hardBufferBytes: 64 * 1024 * 1024,
  abuseLimit: 50,
  abuseWindowMs: 10_000,
  retryAfterMs: 1000,
  workerStallMs: 10_000,
  recordBlockBytes: 1024 * 1024,
  validateTimeLimitMs: 10_000,
  validateQueue: 8,
  workerCheckpointMs: 2000,
  warmupAgents: 2000,
  warmupSession: true,
  sessionAffinity: DEFAULT_SESSION_AFFINITY,
  minStagedRows: MIN_STAGED_ROWS,
  spawnHelperNice: 10,
  spawnHelperHoldMs: 2000,
};

/** What createServer takes: the configuration, plus optional tuning. */
export type ServerConfig = Config & { readonly tuning?: Partial<Tuning> };

/** The service's life: 503 on /readyz unless `ready`. */
export type Phase = 'starting' | 'ready' | 'draining' | 'closed';

/** A WebSocket connection as the rest of the service sees it (for shutdown). */
export interface LiveConnection {
  /** Shutdown: ignore frames from now on (a tick in flight still answers). */
  stopReading(): void;
  /** Resolves once the frame being handled when reading stopped is done (its tick queued or answered). */
  settled(): Promise<void>;
  /** Tells the client goodbye and closes the socket. */
  goodbye(reason: string, retryAfterMs?: number): void;
  /** Resolves when the socket is closed. */
  readonly closed: Promise<void>;
}

/** Shared by every plugin of one server. */
export interface ServiceContext {
  readonly config: Config;
  readonly tuning: Tuning;
  readonly pool: AgentPool;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly sessions: SessionRegistry;
  readonly connections: Set<LiveConnection>;
  /** The flight recorder: recordings being written and on disk. */
  readonly recordings: Recordings;
  /** Durable sessions across instances (CANOPY_REDIS_URL), or null. */
  readonly durability: Durability | null;
  /** Names of the loaded trees, sorted. */
  treeNames(): readonly string[];
  /** The observation fields tree `name` reads (undefined for an unknown tree). */
  treeReads(name: string): TreeReads | undefined;
  phase: Phase;
  /**
   * While the start-up warm-up drives a session of its own through a loopback WebSocket (warmup.ts): the secret
   * its upgrade request carries in `x-canopy-warmup`, the one connection let in before the service is ready. Null otherwise.
   */
  warmupKey: string | null;
}
