// `once`: ticks the child until it finishes once in the agent's life, then returns that result forever.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status, type TickStatus } from '../status.js';

export const once = defineNode({
  type: 'once',
  category: 'decorator',
  description: "Ticks the child until it finishes once in the agent's life; afterwards returns that result without ticking it.",
  params: {},
  build(b) {
    const child = b.child(0);
    const result = b.slots(1);
    return {
      tick(a) {
        const done = a.slots[result]!;
        if (done !== 0) return done as TickStatus;
        const s = child(a);
        if (s !== Status.RUNNING) a.slots[result] = s;
        return s;
      },
      emit: (e, _fresh, t) =>
        js`if (sl[${result}] !== 0) { ${t} = sl[${result}]; break ${e.label}; }
${e.child(0, t)}if (${t} !== ${Status.RUNNING}) sl[${result}] = ${t};\n`,
    };
  },
});
