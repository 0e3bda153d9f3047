// What each agent of a session last decided, for the hierarchy's filters (action, finished, error):
// kept from the session's decisions only while an inspector page shows that session, then dropped.

import type { AgentId } from '../bt/index.js';
import type { TickDecisions } from '../service/sessions/tickStats.js';

/** Agents with something to filter on, compact for the page. */
export interface ActivityView {
  /** Action names, indexed by the rows. */
  actions: string[];
  /** `[id, last action index or -1, tree finished: 'success' | 'failure' | null, last error code or null]`. */
  rows: Array<[AgentId, number, 'success' | 'failure' | null, string | null]>;
}

/** Per agent: the last action decided, whether the tree finished on its last tick, the last error. */
export class AgentActivity {
  private readonly action = new Map<AgentId, string>();
  private readonly done = new Map<AgentId, 'success' | 'failure'>();
  private readonly error = new Map<AgentId, string>();

  /** One tick's decisions. An agent that decides again after finishing is running again. */
  record(d: TickDecisions): void {
    for (const a of d.actions) {
      this.action.set(a[0], a[2]);
      this.done.delete(a[0]);
    }
    for (const [id, status] of d.done) this.done.set(id, status);
    for (const [id, code] of d.errors) this.error.set(id, code);
  }

  view(): ActivityView {
    const actions: string[] = [];
    const index = new Map<string, number>();
    const ids = new Set<AgentId>([...this.action.keys(), ...this.done.keys(), ...this.error.keys()]);
    const rows: ActivityView['rows'] = [];
    for (const id of ids) {
      const name = this.action.get(id);
      let i = -1;
      if (name !== undefined) {
        i = index.get(name) ?? -1;
        if (i < 0) {
          i = actions.push(name) - 1;
          index.set(name, i);
        }
      }
      rows.push([id, i, this.done.get(id) ?? null, this.error.get(id) ?? null]);
    }
    return { actions, rows };
  }
}
