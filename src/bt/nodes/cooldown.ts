// `cooldown`: after the child finishes, fails without ticking it until `seconds` of tree time have passed.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status, TIME_EPSILON } from '../status.js';

export const cooldown = defineNode({
  type: 'cooldown',
  category: 'decorator',
  description: 'After the child finishes, returns failure without ticking the child until `seconds` of tree time have passed.',
  params: { seconds: { type: 'number', min: 0, required: true, description: 'Cooldown length in seconds of tree time.' } },
  build(b) {
    const child = b.child(0);
    const seconds = b.param<number>('seconds');
    // [cooling (0/1), tree time when the cooldown ends] — kept across entries, never reset by a halt.
    const slot = b.slots(2);
    return {
      tick(a, fresh) {
        const slots = a.slots;
        if (fresh && slots[slot] === 1 && a.time + TIME_EPSILON < slots[slot + 1]!) return Status.FAILURE;
        const s = child(a);
        if (s !== Status.RUNNING) {
          slots[slot] = 1;
          slots[slot + 1] = a.time + seconds;
        }
        return s;
      },
      emit: (e, fresh, t) =>
        js`if (${fresh} && sl[${slot}] === 1 && a.time + ${TIME_EPSILON} < sl[${slot + 1}]) { ${t} = ${Status.FAILURE}; break ${e.label}; }
${e.child(0, t)}if (${t} !== ${Status.RUNNING}) { sl[${slot}] = 1; sl[${slot + 1}] = a.time + ${e.bind(seconds)}; }\n`,
      state: (a) => ({ left: a.slots[slot] === 1 ? Math.max(0, a.slots[slot + 1]! - a.time) : 0 }),
    };
  },
});
