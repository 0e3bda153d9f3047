// The engine with and without string code generation, A/B in one run: child processes of the engine benchmark
// alternate between plain `node` and `node --disallow-code-generation-from-strings` (the flag is process-wide).
//
//   npm run bench:no-codegen -- [--pairs N] [--rounds R]   (defaults: 3 pairs, 3 rounds per child)
//
// Prints, per tree, the best agent-ticks/s of each side and their ratio (best of each side: other work on a
// shared machine only ever slows a run down). See docs/codegen.md.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { benchArgs, intArg } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    pairs: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
  },
});
const pairs = intArg(values, 'pairs', 1);
const rounds = intArg(values, 'rounds', 1);

const ENGINE = fileURLToPath(new URL('./engine.js', import.meta.url));
const TREES = ['canopy', 'canopy-large'] as const;
const SIDES = [
  { name: 'generated code', flags: [] as string[] },
  { name: 'no code generation', flags: ['--disallow-code-generation-from-strings'] },
] as const;

interface EngineResult {
  readonly name: string;
  readonly agentTicksPerSec: number;
}

/** One child run of the engine benchmark: agent-ticks/s per tree. */
function run(flags: readonly string[]): Map<string, number> {
  const out = execFileSync(process.execPath, ['--expose-gc', ...flags, ENGINE, '--only', TREES.join(','), '--rounds', String(rounds), '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'], // the children's per-round progress goes to their stderr
    maxBuffer: 16 * 1024 * 1024,
  });
  const last = out.trim().split('\n').at(-1)!;
  const parsed = JSON.parse(last) as { results: EngineResult[] };
  return new Map(parsed.results.map((r) => [r.name, r.agentTicksPerSec]));
}

const best = SIDES.map(() => new Map<string, number>());
for (let p = 0; p < pairs; p++) {
  SIDES.forEach((side, s) => {
    for (const [tree, rate] of run(side.flags)) best[s]!.set(tree, Math.max(best[s]!.get(tree) ?? 0, rate));
  });
}

const million = (n: number): string => (n / 1e6).toFixed(2);
console.log(formatMachine(machineInfo()));
console.log(`${pairs} alternating pairs of child runs, ${rounds} rounds each; best run per side (M agent-ticks/s)\n`);
console.log(
  formatTable([
    ['tree', ...SIDES.map((s) => s.name), 'ratio'],
    ...TREES.map((tree) => {
      const [a, b] = [best[0]!.get(tree) ?? 0, best[1]!.get(tree) ?? 0];
      return [tree, million(a), million(b), a > 0 ? `${(b / a).toFixed(2)}×` : '-'];
    }),
  ]),
);
