// Validation's check-only path for expressions (parse + check) against full compilation (which also
// generates code with new Function and folds constants), on the same 20,000 expressions, A/B in one run.
//
//   npm run build && node dist/bench/expr-check.js

import { checkExpression, compileExpression } from '../src/bt/expr/index.js';
import { benchArgs } from './lib/args.js';
import { formatMachine, machineInfo } from './lib/machine.js';

benchArgs(import.meta.url, { options: {} });

const scope = { blackboardKeys: new Set(['hp', 'target']) };
const exprs = Array.from({ length: 20_000 }, (_, i) => `bb.hp > ${i % 50} && dist(self, world.base) < 10 && bb.target != null`);
console.log(formatMachine(machineInfo()));
console.log('The machine may be shared with other work: read the ratio, not the times.');
for (let round = 1; round <= 5; round++) {
  let t = performance.now();
  for (const e of exprs) checkExpression(e, scope);
  const check = performance.now() - t;
  t = performance.now();
  for (const e of exprs) compileExpression(e, scope);
  const compile = performance.now() - t;
  console.log(`round ${round}: check ${check.toFixed(0)} ms, compile ${compile.toFixed(0)} ms: check is ${(compile / check).toFixed(1)}× cheaper`);
}
