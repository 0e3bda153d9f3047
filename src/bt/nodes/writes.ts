// Blackboard writes shared by `set` and `subtree` args: every expression is evaluated before any key is written.

import type { Agent } from '../agent.js';
import type { CompiledExpr } from '../expr/index.js';

/** Returns a function applying `writes` to an agent's blackboard; `{a: 'bb.b', b: 'bb.a'}` swaps. */
export function blackboardWriter(writes: ReadonlyArray<readonly [string, CompiledExpr]>): (a: Agent) => void {
  if (writes.length === 1) {
    const [key, expr] = writes[0]!;
    return (a) => {
      a.bb[key] = expr(a);
    };
  }
  // One scratch array per node, reused on every tick: agents tick one at a time within a thread.
  const scratch: unknown[] = writes.map(() => null);
  return (a) => {
    for (let k = 0; k < writes.length; k++) scratch[k] = writes[k]![1](a);
    for (let k = 0; k < writes.length; k++) {
      a.bb[writes[k]![0]] = scratch[k];
      scratch[k] = null;
    }
  };
}
