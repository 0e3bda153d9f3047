// `subtree`: runs another tree's root in place (inlined at compile time), writing `args` on entry.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { blackboardWriter } from './writes.js';

export const subtree = defineNode({
  type: 'subtree',
  category: 'leaf',
  description: "Runs another tree's root in place. The subtree's declared blackboard keys join the agent's blackboard; `args` (key → expression) are written on entry.",
  params: {
    tree: { type: 'string', required: true, description: 'Name of the tree file to run (without extension).' },
    args: { type: 'writes', literals: true, default: {}, description: "Blackboard key → value written when the subtree is entered: strings are expressions, other JSON values literals." },
  },
  build(b) {
    // The compiler inlines the named tree's root as this node's only child.
    const child = b.child(0);
    const writes = b.writes('args');
    const write = writes.length > 0 ? blackboardWriter(writes) : null;
    return {
      tick(a, fresh) {
        if (fresh && write !== null) write(a);
        return child(a);
      },
      emit: (e, fresh, t) => js`${write !== null ? js`if (${fresh}) {\n${e.writes(writes)}}\n` : js``}${e.child(0, t)}`,
    };
  },
});
