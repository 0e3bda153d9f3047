// `delay`: returns running for `seconds` of tree time after entry, then ticks the child.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status, TIME_EPSILON } from '../status.js';

export const delay = defineNode({
  type: 'delay',
  category: 'decorator',
  description: 'Returns running for `seconds` after entry, then ticks the child (and returns what it returns).',
  params: { seconds: { type: 'number', min: 0, required: true, description: 'Delay in seconds of tree time.' } },
  build(b) {
    const child = b.child(0);
    const seconds = b.param<number>('seconds');
    const start = b.slots(1);
    return {
      tick(a, fresh) {
        if (fresh) a.slots[start] = a.time;
        if (a.time + TIME_EPSILON < a.slots[start]! + seconds) return Status.RUNNING;
        return child(a);
      },
      emit: (e, fresh, t) =>
        js`if (${fresh}) sl[${start}] = a.time;
if (a.time + ${TIME_EPSILON} < sl[${start}] + ${e.bind(seconds)}) { ${t} = ${Status.RUNNING}; break ${e.label}; }
${e.child(0, t)}`,
      state: (a) => (a.status[b.index] === Status.RUNNING ? { left: Math.max(0, a.slots[start]! + seconds - a.time) } : null),
    };
  },
});
