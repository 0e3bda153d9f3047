// `rotator`: each entry ticks the next child in turn (wrapping); `resetOnAbort` restarts from the first after a halt.

import { joinCode, js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const rotator = defineNode({
  type: 'rotator',
  category: 'composite',
  description: 'Ticks one child per entry, the next one each time (wrapping). A running child is resumed. `resetOnAbort: true` restarts from the first child after the rotator is halted.',
  params: {
    resetOnAbort: { type: 'boolean', default: false, description: 'After the rotator is halted, the next entry starts from the first child.' },
  },
  build(b) {
    const n = b.childCount;
    const ticks = b.children.map((_, k) => b.child(k));
    const reset = b.param<boolean>('resetOnAbort');
    // [next child to enter (kept across entries), child of the current entry]
    const slot = b.slots(2);
    return {
      tick(a, fresh) {
        const slots = a.slots;
        if (fresh) {
          const k = slots[slot]!;
          slots[slot + 1] = k;
          slots[slot] = (k + 1) % n;
        }
        return ticks[slots[slot + 1]!]!(a);
      },
      emit(e, fresh, t) {
        const cases = Array.from({ length: n }, (_, k) => js`case ${k}: {\n${e.child(k, t)}break;\n}\n`);
        return js`if (${fresh}) {
  const k = sl[${slot}];
  sl[${slot + 1}] = k;
  sl[${slot}] = (k + 1) % ${n};
}
switch (sl[${slot + 1}]) {\n${joinCode(cases)}}\n`;
      },
      state: (a) => (a.status[b.index] === Status.IDLE ? null : { child: a.slots[slot + 1]! }),
      onHalt: reset
        ? (a) => {
            a.slots[slot] = 0;
          }
        : undefined,
    };
  },
});
