// `wait`: running until a fixed or randomly drawn number of seconds of tree time has passed.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status, TIME_EPSILON } from '../status.js';

export const wait = defineNode({
  type: 'wait',
  category: 'leaf',
  description: "Running until `seconds` of tree time have passed, then success. `[min, max]` draws the duration with the agent's seeded generator on entry.",
  params: { seconds: { type: 'duration', required: true, description: 'Seconds (≥ 0), or [min, max].' } },
  build(b) {
    const seconds = b.param<number | [number, number]>('seconds');
    const min = typeof seconds === 'number' ? seconds : seconds[0];
    const span = typeof seconds === 'number' ? 0 : seconds[1] - seconds[0];
    const end = b.slots(1);
    return {
      tick(a, fresh) {
        if (fresh) a.slots[end] = a.time + (span === 0 ? min : min + a.random() * span);
        return a.time + TIME_EPSILON >= a.slots[end]! ? Status.SUCCESS : Status.RUNNING;
      },
      emit: (e, fresh, t) =>
        js`if (${fresh}) sl[${end}] = a.time + ${span === 0 ? e.bind(min) : js`(${e.bind(min)} + a.random() * ${e.bind(span)})`};
${t} = a.time + ${TIME_EPSILON} >= sl[${end}] ? ${Status.SUCCESS} : ${Status.RUNNING};\n`,
      state: (a) => (a.status[b.index] === Status.RUNNING ? { left: Math.max(0, a.slots[end]! - a.time) } : null),
    };
  },
});
