// `action`: issues an action to the game server and waits for its result, `until`, or `timeout`.
// Every issued non-instant action ends exactly once: a result from the game, or a cancel from the tree.

import { js } from '../codegen.js';
import { truthy } from '../expr/index.js';
import { defineNode } from '../node.js';
import { constantArgs } from '../program-inline.js';
import { Status, TIME_EPSILON } from '../status.js';

export const action = defineNode({
  type: 'action',
  category: 'leaf',
  description:
    'On entry, issues a new action (new seq) to the game server. `instant` → success at once. Otherwise running until a result for that seq arrives, `until` becomes true (success), or `timeout` expires (failure); those two, and halting, send a cancel.',
  params: {
    action: { type: 'string', required: true, description: 'The action name the game server receives.' },
    args: { type: 'args', default: {}, description: 'Arguments: strings are expressions, other JSON values literals.' },
    until: { type: 'expression', description: 'Ends the action with success (and a cancel) when it becomes true; checked from the tick after entry.' },
    timeout: { type: 'number', min: 0, description: 'Seconds of tree time after which the action fails (and is cancelled).' },
    instant: { type: 'boolean', default: false, description: 'Succeed at once after issuing: the game server sends no result.' },
  },
  validate(node, report) {
    if (node['instant'] === true && (node['until'] !== undefined || node['timeout'] !== undefined)) {
      report("an instant action cannot have 'until' or 'timeout'", node['until'] !== undefined ? 'until' : 'timeout');
    }
  },
  build(b) {
    const name = b.param<string>('action');
    const args = b.args('args');
    // All-literal args are one frozen object: generated code passes it without a call.
    const fixedArgs = constantArgs(args);
    const until = b.expression('until');
    const timeout = b.param<number | undefined>('timeout');
    const instant = b.param<boolean>('instant');
    // [seq of the running action, pending result (0 none, else a Status), deadline (with a timeout)]. An instant action
    // never runs past its tick: it needs none.
    const slot = instant ? -1 : b.slots(timeout !== undefined ? 3 : 2);
    if (!instant) b.registerAction(slot, slot + 1);
    return {
      tick(a, fresh) {
        const slots = a.slots;
        if (fresh || instant) {
          const seq = ++a.seq;
          a.out.action(a, seq, name, args(a));
          if (instant) return Status.SUCCESS;
          slots[slot] = seq;
          slots[slot + 1] = 0;
          if (timeout !== undefined) slots[slot + 2] = a.time + timeout;
          return Status.RUNNING;
        }
        const result = slots[slot + 1]!;
        if (result !== 0) return result === Status.SUCCESS ? Status.SUCCESS : Status.FAILURE;
        if (until !== null && truthy(until(a))) {
          a.out.cancel(a, slots[slot]!);
          return Status.SUCCESS;
        }
        if (timeout !== undefined && a.time + TIME_EPSILON >= slots[slot + 2]!) {
          a.out.cancel(a, slots[slot]!);
          return Status.FAILURE;
        }
        return Status.RUNNING;
      },
      // The same, for whole-tree compilation (see NodeBehavior.emit).
      emit(e, fresh, target) {
        const end = js`break ${e.label};`;
        const issue = js`const seq = ++a.seq;
  a.out.action(a, seq, ${e.bind(name)}, ${fixedArgs !== undefined ? e.bind(fixedArgs) : js`${e.bind(args)}(a)`});`;
        if (instant) return js`{
  ${issue}
  ${target} = ${Status.SUCCESS};
}
`;
        return js`if (${fresh}) {
  ${issue}
  sl[${slot}] = seq;
  sl[${slot + 1}] = 0;
${timeout !== undefined ? js`  sl[${slot + 2}] = a.time + ${e.bind(timeout)};\n` : js``}  ${target} = ${Status.RUNNING}; ${end}
}
{ const r = sl[${slot + 1}]; if (r !== 0) { ${target} = r === ${Status.SUCCESS} ? ${Status.SUCCESS} : ${Status.FAILURE}; ${end} } }
${until !== null ? js`if (${e.bind(until)}(a)) { a.out.cancel(a, sl[${slot}]); ${target} = ${Status.SUCCESS}; ${end} }\n` : js``}${
          timeout !== undefined
            ? js`if (a.time + ${TIME_EPSILON} >= sl[${slot + 2}]) { a.out.cancel(a, sl[${slot}]); ${target} = ${Status.FAILURE}; ${end} }\n`
            : js``
        }${target} = ${Status.RUNNING};\n`;
      },
      onHalt(a) {
        if (instant) return;
        // A result already arrived for this seq: the game has finished it, so there is nothing to cancel.
        if (a.slots[slot + 1] === 0) a.out.cancel(a, a.slots[slot]!);
      },
    };
  },
});
