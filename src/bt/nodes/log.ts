// `log`: emits a debug event with an evaluated message; always succeeds.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const log = defineNode({
  type: 'log',
  category: 'leaf',
  description: 'Emits a debug event (debugger, logs at debug level) with the evaluated `message`. success.',
  params: {
    message: { type: 'expression', required: true, description: "An expression; a fixed text is written with quotes inside: \"'spotted'\"." },
    level: { type: 'enum', values: ['debug', 'info', 'warn', 'error'], default: 'debug', description: 'Log level.' },
  },
  build(b) {
    const message = b.expression('message')!;
    const level = b.param<string>('level');
    const node = b.index; // the sink names the node that logged (service logs, the inspector's timeline)
    return {
      tick(a) {
        const v = message(a);
        a.out.log(a, level, typeof v === 'string' ? v : JSON.stringify(v), node);
        return Status.SUCCESS;
      },
      emit: (e, _fresh, t) =>
        js`{ const v = ${e.bind(message)}(a); a.out.log(a, ${e.bind(level)}, typeof v === 'string' ? v : JSON.stringify(v), ${node}); }\n${t} = ${Status.SUCCESS};\n`,
    };
  },
});
