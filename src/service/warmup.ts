// The start-up warm-up: a fresh process runs its first spawns and ticks in cold code (V8 optimizes a function only
// after it has run a while), several times slower than later ones — measured on a 10,000-agent spawn: decoding
// 38 vs 5 ms, routing 31 vs 3.5 ms, creating the agents on a worker 56 vs 3–9 ms. The game servers that connect
// first would pay for it, all at once, in their first seconds. So before the service says it is ready, it runs the
// same code on agents of its own: spawn frames decoded and routed, agents created on every worker, snapshot
// frames read by the fast path and routed, ticks (only when no plugin is loaded: built-in nodes have no effect
// outside the agent), a despawn, then the session is dropped. No game server sees any of it.

import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { encode, encodeDecisions, parseClientFrame, type AgentId, type PackedRows } from '../protocol/index.js';
import type { AgentPool, SpawnEntry } from './pool/index.js';

/** Observation fields of the warm-up session: the value kinds of the fast path (number, boolean, null, [x, y]). */
const FIELDS = ['warmA', 'warmB', 'warmC', 'warmD'];

export interface WarmupOptions {
  /** Agents per round (0: no warm-up). */
  readonly agents: number;
  /** Rounds: each spawns, ticks and despawns `agents` agents. */
  readonly rounds: number;
  /** Ticks per round; 0 to only spawn and despawn (trees with plugin code are never ticked here). */
  readonly ticks: number;
  readonly maxFrameBytes: number;
}

/** Runs the warm-up on `pool` with agents on `trees` (cycled); resolves with what it did. Never throws. */
export async function warmUp(pool: AgentPool, trees: readonly string[], o: WarmupOptions): Promise<{ ms: number; agents: number; ticks: number; error?: string }> {
  const started = performance.now();
  let ticks = 0;
  if (o.agents <= 0 || o.rounds <= 0 || trees.length === 0) return { ms: 0, agents: 0, ticks: 0 };
  const parse = (msg: Record<string, unknown>) => parseClientFrame(encode(msg), o.maxFrameBytes, { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true });
  for (let round = 0; round < o.rounds; round++) {
    const session = `warmup-${randomUUID()}`;
    let created = false;
    try {
      pool.createSession(session, { fields: FIELDS, maxAgents: o.agents });
      created = true;
      // Dense, sparse and string ids, so each path of the id handling is warm.
      const ids: AgentId[] = Array.from({ length: o.agents }, (_, i) => (i % 3 === 0 ? i : i % 3 === 1 ? 1_000_000 + i : `warm-${i}`));
      const spawn = parse({ t: 'spawn', id: 1, agents: ids.map((id, i) => ({ id, tree: trees[i % trees.length]!, seed: i })) });
      if (!spawn.ok || spawn.msg.t !== 'spawn') throw new Error(`warm-up spawn frame refused: ${spawn.ok ? spawn.msg.t : spawn.message}`);
      const entries: SpawnEntry[] = spawn.msg.agents.map((a) => ({ id: a.id, tree: a.tree, ...(a.seed !== undefined ? { seed: a.seed } : {}) }));
      pool.spawn(session, entries);
      for (let t = 1; t <= o.ticks; t++) {
        const rows = ids.map((id, i) => [id, (i * 7 + t) % 100, (i + t) % 3 === 0, (i + t) % 5 === 0 ? null : i * 0.5, [i * 0.25, t * 0.5]]);
        const snapshot = parse({ t: 'snapshot', tick: t, time: t * 0.05, agents: rows });
        if (!snapshot.ok || snapshot.msg.t !== 'snapshot') throw new Error('warm-up snapshot frame refused');
        pool.observe(session, snapshot.msg.agents as PackedRows, false);
        const d = await pool.tick(session, t, t * 0.05, 0.05, t);
        encodeDecisions({ tick: t, basedOn: t, actions: d.actions as never, cancels: d.cancels, done: d.done, errors: d.errors as never });
        ticks++;
      }
      const despawn = parse({ t: 'despawn', id: 2, ids });
      if (despawn.ok && despawn.msg.t === 'despawn') pool.despawn(session, despawn.msg.ids);
    } catch (err) {
      return { ms: performance.now() - started, agents: o.agents * round, ticks, error: err instanceof Error ? err.message : String(err) };
    } finally {
      // A pool closed meanwhile (a shutdown during start-up) has nothing left to free.
      if (created) {
        try {
          pool.destroySession(session);
        } catch {
          // closed
        }
      }
    }
  }
  return { ms: performance.now() - started, agents: o.agents * o.rounds, ticks };
}
