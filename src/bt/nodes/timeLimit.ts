// `timeLimit`: halts a child still running `seconds` after entry and fails.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status, TIME_EPSILON } from '../status.js';

export const timeLimit = defineNode({
  type: 'timeLimit',
  category: 'decorator',
  description: 'If the child is still running `seconds` after entry, it is halted and timeLimit returns failure.',
  params: { seconds: { type: 'number', min: 0, required: true, description: 'Time allowed, in seconds of tree time.' } },
  build(b) {
    const child = b.child(0);
    const childNode = b.children[0]!;
    const seconds = b.param<number>('seconds');
    const deadline = b.slots(1);
    const halt = b.halt;
    return {
      tick(a, fresh) {
        if (fresh) a.slots[deadline] = a.time + seconds;
        else if (a.time + TIME_EPSILON >= a.slots[deadline]!) {
          halt(a, childNode);
          return Status.FAILURE;
        }
        return child(a);
      },
      emit: (e, fresh, t) =>
        js`if (${fresh}) sl[${deadline}] = a.time + ${e.bind(seconds)};
else if (a.time + ${TIME_EPSILON} >= sl[${deadline}]) { ${e.bind(halt)}(a, ${childNode}); ${t} = ${Status.FAILURE}; break ${e.label}; }
${e.child(0, t)}`,
      state: (a) => (a.status[b.index] === Status.RUNNING ? { left: Math.max(0, a.slots[deadline]! - a.time) } : null),
    };
  },
});
