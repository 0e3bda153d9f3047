// `spawned.warnings`: a session that declared `hello.fields` hears once per tree when the tree reads
// `self` fields it did not declare (a misspelt `position` for `pos` would otherwise read null silently).

import type { AgentId, SpawnAgent, SpawnWarning, TreeReads } from '../../protocol/index.js';
import type { Session } from './session.js';

/** Trees already warned about, per session (weakly held: a freed session takes its set with it). */
const warned = new WeakMap<Session, Set<string>>();

/**
 * The warnings for the agents of `agents` that were created (`created`), for trees not yet warned
 * about in this session. None when the session declared no fields.
 */
export function fieldWarnings(
  session: Session,
  agents: readonly SpawnAgent[],
  created: readonly AgentId[],
  reads: (tree: string) => TreeReads | undefined,
): SpawnWarning[] {
  const fields = session.fields;
  if (fields === null || created.length === 0) return [];
  let done = warned.get(session);
  // Every agent created (the common case): no set of 10,000 ids to build and ask, once per spawn, on the main thread.
  const ok = created.length === agents.length ? null : new Set<AgentId>(created);
  const out: SpawnWarning[] = [];
  for (const agent of agents) {
    if (done?.has(agent.tree) === true || (ok !== null && !ok.has(agent.id))) continue;
    if (done === undefined) warned.set(session, (done = new Set()));
    done.add(agent.tree);
    const missing = (reads(agent.tree)?.self ?? []).filter((f) => !fields.includes(f));
    if (missing.length === 0) continue;
    out.push({
      code: 'W_FIELD_NOT_DECLARED',
      tree: agent.tree,
      fields: missing,
      message: `tree ${JSON.stringify(agent.tree)} reads ${missing.map((f) => `self.${f}`).join(', ')}, not among hello.fields; ${missing.length === 1 ? 'it reads' : 'they read'} null`,
    });
  }
  return out;
}
