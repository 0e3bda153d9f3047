// `inverter`: swaps success and failure; running passes through.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const inverter = defineNode({
  type: 'inverter',
  category: 'decorator',
  description: 'success ↔ failure; running unchanged.',
  params: {},
  build(b) {
    const child = b.child(0);
    return {
      tick(a) {
        const s = child(a);
        return s === Status.SUCCESS ? Status.FAILURE : s === Status.FAILURE ? Status.SUCCESS : s;
      },
      emit: (e, _fresh, t) =>
        js`${e.child(0, t)}${t} = ${t} === ${Status.SUCCESS} ? ${Status.FAILURE} : ${t} === ${Status.FAILURE} ? ${Status.SUCCESS} : ${t};\n`,
    };
  },
});
