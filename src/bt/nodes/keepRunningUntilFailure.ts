// `keepRunningUntilFailure`: restarts the child after every success; ends only on failure.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const keepRunningUntilFailure = defineNode({
  type: 'keepRunningUntilFailure',
  category: 'decorator',
  description: 'Child success → restart it, running; child failure → failure.',
  params: {},
  build(b) {
    const child = b.child(0);
    return {
      tick: (a) => (child(a) === Status.FAILURE ? Status.FAILURE : Status.RUNNING),
      emit: (e, _fresh, t) => js`${e.child(0, t)}${t} = ${t} === ${Status.FAILURE} ? ${Status.FAILURE} : ${Status.RUNNING};\n`,
    };
  },
});
