// The start-up warm-up: a fresh process runs its first spawns and ticks in cold code (V8 optimizes a function only
// after it has run a while), several times slower than later ones — measured on a 10,000-agent spawn: decoding
// 38 vs 5 ms, routing 31 vs 3.5 ms, creating the agents on a worker 56 vs 3–9 ms. The game servers that connect
// first would pay for it, all at once, in their first seconds. So before the service says it is ready, it runs the
// same code on agents of its own: spawn frames decoded and routed, agents created on every worker, snapshot
// frames read by the fast path and routed, ticks (only when no plugin is loaded: built-in nodes have no effect
// outside the agent), a despawn, then the session is dropped. No game server sees any of it.

import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { WebSocket, type RawData } from 'ws';
import { PROTOCOL_VERSION, decode, encode, encodeDecisions, parseClientFrame, type AgentId, type PackedRows } from '../protocol/index.js';
import { frameFields, type AgentPool, type SpawnEntry } from './pool/index.js';

/** Observation fields of the warm-up session: the value kinds of the fast path (number, boolean, null, [x, y]). */
const FIELDS = ['warmA', 'warmB', 'warmC', 'warmD'];

/** What a warm-up did: how long it took, the agents it spawned and freed, the ticks it ran, why it stopped early. */
export interface WarmupResult {
  readonly ms: number;
  readonly agents: number;
  readonly ticks: number;
  /** The pool's warm-up: workers that held its agents (0 inline). */
  readonly workers?: number;
  readonly error?: string;
}

export interface WarmupOptions {
  /** Agents per round (0: no warm-up). */
  readonly agents: number;
  /** Rounds: each spawns, ticks and despawns `agents` agents. */
  readonly rounds: number;
  /** Ticks per round; 0 to only spawn and despawn (trees with plugin code are never ticked here). */
  readonly ticks: number;
  readonly maxFrameBytes: number;
}

/**
 * Runs the warm-up on `pool` with agents on `trees` (cycled); resolves with what it did. Never throws. Each round has
 * one session per worker, ticked together: a session's agents stay on one worker (PoolOptions.sessionAffinity), and
 * every worker's code must be warm.
 */
export async function warmUp(pool: AgentPool, trees: readonly string[], o: WarmupOptions): Promise<WarmupResult> {
  const started = performance.now();
  let ticks = 0;
  let workers = 0;
  if (o.agents <= 0 || o.rounds <= 0 || trees.length === 0) return { ms: 0, agents: 0, ticks: 0, workers: 0 };
  const parse = (msg: Record<string, unknown>) => parseClientFrame(encode(msg), o.maxFrameBytes, { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true });
  const count = Math.max(1, Math.min(pool.workerCount, o.agents));
  for (let round = 0; round < o.rounds; round++) {
    const sessions: Array<{ name: string; ids: AgentId[] }> = [];
    try {
      for (let k = 0; k < count; k++) {
        const name = `warmup-${randomUUID()}`;
        pool.createSession(name, { fields: FIELDS, maxAgents: o.agents });
        // Dense, sparse and string ids, so each path of the id handling is warm.
        const from = Math.floor((k * o.agents) / count);
        const ids: AgentId[] = Array.from({ length: Math.floor(((k + 1) * o.agents) / count) - from }, (_, j) => {
          const i = from + j;
          return i % 3 === 0 ? i : i % 3 === 1 ? 1_000_000 + i : `warm-${i}`;
        });
        sessions.push({ name, ids });
        const spawn = parse({ t: 'spawn', id: 1, agents: ids.map((id, i) => ({ id, tree: trees[(from + i) % trees.length]!, seed: from + i })) });
        if (!spawn.ok || spawn.msg.t !== 'spawn') throw new Error(`warm-up spawn frame refused: ${spawn.ok ? spawn.msg.t : spawn.message}`);
        const entries: SpawnEntry[] = spawn.msg.agents.map((a) => ({ id: a.id, tree: a.tree, ...(a.seed !== undefined ? { seed: a.seed } : {}) }));
        pool.spawn(name, entries);
      }
      workers = Math.max(workers, pool.workerStats().filter((w) => w.agents > 0).length);
      for (let t = 1; t <= o.ticks; t++) {
        await Promise.all(
          sessions.map(async ({ name, ids }) => {
            const rows = ids.map((id, i) => [id, (i * 7 + t) % 100, (i + t) % 3 === 0, (i + t) % 5 === 0 ? null : i * 0.5, [i * 0.25, t * 0.5]]);
            const snapshot = parse({ t: 'snapshot', tick: t, time: t * 0.05, agents: rows });
            if (!snapshot.ok || snapshot.msg.t !== 'snapshot') throw new Error('warm-up snapshot frame refused');
            pool.observe(name, snapshot.msg.agents as PackedRows, false);
            const d = await pool.tick(name, t, t * 0.05, 0.05, t);
            encodeDecisions(frameFields(d, t, t));
          }),
        );
        ticks++;
      }
      for (const { name, ids } of sessions) {
        const despawn = parse({ t: 'despawn', id: 2, ids });
        if (despawn.ok && despawn.msg.t === 'despawn') pool.despawn(name, despawn.msg.ids);
      }
    } catch (err) {
      return { ms: performance.now() - started, agents: o.agents * round, ticks, workers, error: err instanceof Error ? err.message : String(err) };
    } finally {
      // A pool closed meanwhile (a shutdown during start-up) has nothing left to free.
      for (const { name } of sessions) {
        try {
          pool.destroySession(name);
        } catch {
          // closed
        }
      }
    }
  }
  return { ms: performance.now() - started, agents: o.agents * o.rounds, ticks, workers };
}

export interface SessionWarmupOptions {
  /** ws:// URL of the service's own /v1/ws (loopback). */
  readonly url: string;
  /** Upgrade request headers: the warm-up secret (ws.ts) and an API key when keys are configured. */
  readonly headers: Record<string, string>;
  readonly trees: readonly string[];
  /** Agents per round, spawned in one message (more than ws.ts spawns per turn of the event loop). */
  readonly agents: number;
  readonly rounds: number;
  /** Lockstep ticks per round; 0 to only spawn and despawn (plugin code is never ticked here). */
  readonly ticks: number;
  readonly maxFrameBytes: number;
  /** The whole warm-up gives up after this long (default 30 s). */
  readonly timeoutMs?: number;
}

/**
 * The connection and session layer's warm-up: what a game server does, through a real WebSocket to the service
 * itself — hello, a spawn of `agents` agents with a snapshot right behind it (queued behind the spawn's parts),
 * lockstep ticks, a despawn, bye — `rounds` times. It warms what the pool's warm-up cannot reach: ws frames in and
 * out, the connection's queue and parts (ws.ts), the session's spawn, lockstep and replies. Resolves with what it
 * did; never throws.
 */
export async function warmUpSession(o: SessionWarmupOptions): Promise<WarmupResult> {
  const started = performance.now();
  // Spawn frames are the larger ones: about 40 bytes an agent with these ids and tree names.
  const agents = Math.min(Math.floor(o.agents), Math.floor(o.maxFrameBytes / 64));
  if (agents <= 0 || o.rounds <= 0 || o.trees.length === 0) return { ms: 0, agents: 0, ticks: 0 };
  const deadline = started + (o.timeoutMs ?? 30_000);
  let ticks = 0;
  let done = 0;
  try {
    for (let round = 0; round < o.rounds; round++) {
      const socket = await LoopbackSocket.open(o.url, o.headers, deadline);
      try {
        socket.send({ t: 'hello', v: PROTOCOL_VERSION, mode: 'lockstep', fields: FIELDS });
        await socket.next('welcome');
        const ids: AgentId[] = Array.from({ length: agents }, (_, i) => (i % 3 === 0 ? i : i % 3 === 1 ? 1_000_000 + i : `warm-${i}`));
        const snapshot = (t: number) => ({ t: 'snapshot', tick: t, time: t * 0.05, agents: ids.map((id, i) => [id, (i * 7 + t) % 100, (i + t) % 3 === 0, (i + t) % 5 === 0 ? null : i * 0.5, [i * 0.25, t * 0.5]]) });
        socket.send({ t: 'spawn', id: 1, agents: ids.map((id, i) => ({ id, tree: o.trees[i % o.trees.length]!, seed: i })) });
        // The first snapshot right behind the spawn, as a game server that ticks at once sends it.
        if (o.ticks > 0) socket.send(snapshot(1));
        const spawned = await socket.next('spawned');
        if (!Array.isArray(spawned['ids']) || spawned['ids'].length !== agents) throw new Error(`warm-up spawn answered ${JSON.stringify(spawned['errors'] ?? null).slice(0, 200)}`);
        for (let t = 1; t <= o.ticks; t++) {
          if (t > 1) socket.send(snapshot(t));
          await socket.next('decisions');
          ticks++;
        }
        socket.send({ t: 'despawn', id: 2, ids });
        await socket.next('despawned');
        socket.send({ t: 'bye' });
        await socket.closed;
        done += agents;
      } finally {
        socket.terminate();
      }
    }
  } catch (err) {
    return { ms: performance.now() - started, agents: done, ticks, error: err instanceof Error ? err.message : String(err) };
  }
  return { ms: performance.now() - started, agents: done, ticks };
}

/** A bare client socket for the warm-up: frames in order, the first `error` or `goodbye` fails the wait. */
class LoopbackSocket {
  private readonly frames: Array<Record<string, unknown>> = [];
  private wake: (() => void) | null = null;
  private failure: Error | null = null;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: WebSocket, private readonly deadline: number) {
    socket.on('message', (data: RawData) => {
      try {
        const frame = decode(Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)) as Record<string, unknown>;
        if (frame['t'] === 'error' || frame['t'] === 'goodbye') this.failure ??= new Error(`warm-up session: ${String(frame['t'])} ${String(frame['code'] ?? frame['reason'] ?? '')} ${String(frame['message'] ?? '')}`.trim());
        this.frames.push(frame);
      } catch (err) {
        this.failure ??= err instanceof Error ? err : new Error(String(err));
      }
      this.wake?.();
    });
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.failure ??= new Error('warm-up session: the socket closed');
        this.wake?.();
        resolve();
      }),
    );
    socket.on('error', () => {
      // The close that follows ends any wait.
    });
  }

  static open(url: string, headers: Record<string, string>, deadline: number): Promise<LoopbackSocket> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers, perMessageDeflate: false });
      const timer = setTimeout(() => {
        socket.terminate();
        reject(new Error('warm-up session: no connection in time'));
      }, Math.max(0, deadline - performance.now()));
      socket.once('open', () => {
        clearTimeout(timer);
        resolve(new LoopbackSocket(socket, deadline));
      });
      socket.once('unexpected-response', (_req, res) => {
        clearTimeout(timer);
        socket.terminate();
        reject(new Error(`warm-up session: upgrade refused with HTTP ${res.statusCode ?? '?'}`));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  send(msg: Record<string, unknown>): void {
    this.socket.send(encode(msg));
  }

  /** The next frame of type `t` (frames of other types before it are skipped). */
  async next(t: string): Promise<Record<string, unknown>> {
    for (;;) {
      const i = this.frames.findIndex((f) => f['t'] === t);
      if (i >= 0) return this.frames.splice(0, i + 1)[i]!;
      if (this.failure !== null) throw this.failure;
      const left = this.deadline - performance.now();
      if (left <= 0) throw new Error(`warm-up session: no ${t} in time`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  terminate(): void {
    if (this.socket.readyState !== this.socket.CLOSED) this.socket.terminate();
  }
}
