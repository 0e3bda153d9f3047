// Engine A/B: this build's engine (B) against another build's (A, `--baseline DIR`: a checkout with its own
// `npm run build` done), on the engine benchmark's trees, with ceiling-io alongside, all in one process.
// Rounds alternate the order (A B ceiling … then … ceiling B A), each spawning afresh; medians are reported.
//
//   npm run build && node --expose-gc dist/bench/engine-ab.js --baseline /tmp/canopy-base
//     [--rounds 9] [--clock cpu|wall] [--trees guard,large,shooter] [--agents 10000] [--ticks 100]
//   (a baseline: `git worktree add /tmp/canopy-base main && cd /tmp/canopy-base && ln -s $PWD/node_modules . && npm run build`,
//   or a copy of package.json, bench/trees and dist/ of the other build)
//
// Warm-up: 100 ticks for every tree and ceiling-io (as npm run bench:engine: ceiling-io reaches its steady
// rate after 30–60 ticks, the large trees re-optimise for as long). `--clock cpu` (default) is the process's CPU time.

import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { canopyGuard, canopyLarge, canopyShooter } from './lib/canopy.js';
import { ceilingIoGuard } from './lib/ceiling.js';
import { formatMachine, formatTable, machineInfo, median } from './lib/machine.js';
import type { Implementation } from './lib/population.js';
import { gcAvailable, measure, type Clock } from './lib/run.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '9' },
    clock: { type: 'string', default: 'cpu' },
    trees: { type: 'string', default: 'guard,large,shooter' },
    agents: { type: 'string', default: '10000' },
    ticks: { type: 'string', default: '100' },
  },
});
if (values.baseline === undefined) fail('--baseline DIR is required (a built checkout of the other version)');
const baseFile = join(resolve(values.baseline), 'dist', 'bench', 'lib', 'canopy.js');
if (!existsSync(baseFile)) fail(`no ${baseFile}: run npm run build in the baseline first`);
const clock = values.clock as Clock;
if (clock !== 'cpu' && clock !== 'wall') fail(`--clock must be cpu or wall, not '${values.clock}'`);
const rounds = Number(values.rounds);
const agents = Number(values.agents);
const ticks = Number(values.ticks);
const trees = values.trees.split(',');
for (const t of trees) if (!['guard', 'large', 'shooter'].includes(t)) fail(`unknown tree '${t}' (guard, large, shooter)`);

type Factories = Readonly<Record<'canopyGuard' | 'canopyLarge' | 'canopyShooter', () => Implementation>>;
const base = (await import(pathToFileURL(baseFile).href)) as Factories;
const here: Factories = { canopyGuard, canopyLarge, canopyShooter };
const factories = { guard: 'canopyGuard', large: 'canopyLarge', shooter: 'canopyShooter' } as const;

interface Entry {
  readonly label: string;
  readonly impl: Implementation;
  readonly warmup: number;
  readonly rates: number[];
}
const entries: Entry[] = [];
for (const t of trees) {
  const warmup = 100;
  entries.push({ label: `A ${t}`, impl: base[factories[t as keyof typeof factories]](), warmup, rates: [] });
  entries.push({ label: `B ${t}`, impl: here[factories[t as keyof typeof factories]](), warmup, rates: [] });
  if (t === 'guard') entries.push({ label: 'ceiling-io', impl: ceilingIoGuard(), warmup, rates: [] });
}

const machine = machineInfo();
console.log(`Engine A/B: A = ${resolve(values.baseline)}, B = this build; ${agents} agents, ${ticks} timed ticks, ${rounds} rounds, ${clock === 'cpu' ? 'process CPU time' : 'wall clock'}`);
console.log(formatMachine(machine));
if (!gcAvailable()) console.log('warning: no global.gc (run with node --expose-gc)');
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? entries : entries.toReversed();
  for (const e of order) e.rates.push(measure(e.impl, { agents, ticks, warmup: e.warmup, clock }).agentTicksPerSec);
  console.error(`  round ${r + 1}/${rounds} done`);
}

const rate = (label: string): number | undefined => {
  const e = entries.find((x) => x.label === label);
  return e === undefined ? undefined : median(e.rates);
};
console.log();
console.log(
  formatTable([
    ['', 'median M agent-ticks/s', 'best', 'rounds'],
    ...entries.map((e) => [e.label, (median(e.rates) / 1e6).toFixed(3), (Math.max(...e.rates) / 1e6).toFixed(3), e.rates.map((x) => (x / 1e6).toFixed(2)).join(' ')]),
  ]),
);
console.log();
/**
 * The median of the round-by-round ratios of two entries: each round measures them back to back, so a busy
 * moment of the machine slows both, and on a shared machine this is steadier than the ratio of the medians.
 */
const paired = (top: string, bottom: string): number | undefined => {
  const b = entries.find((x) => x.label === bottom)?.rates;
  const t = entries.find((x) => x.label === top)?.rates;
  return b === undefined || t === undefined ? undefined : median(t.map((x, k) => x / b[k]!));
};
for (const t of trees) console.log(`B ÷ A, ${t} tree: ${(rate(`B ${t}`)! / rate(`A ${t}`)!).toFixed(3)} (medians), ${paired(`B ${t}`, `A ${t}`)!.toFixed(3)} (median of the rounds' ratios)`);
const io = rate('ceiling-io');
if (io !== undefined) {
  console.log(
    `guard ÷ ceiling-io: A ${(rate('A guard')! / io).toFixed(3)}, B ${(rate('B guard')! / io).toFixed(3)} (medians); ` +
      `A ${paired('A guard', 'ceiling-io')!.toFixed(3)}, B ${paired('B guard', 'ceiling-io')!.toFixed(3)} (median of the rounds' ratios)`,
  );
}
console.log(`load average at the end: ${machineInfo().load.toFixed(2)}`);

function fail(message: string): never {
  console.error(`engine-ab: ${message}`);
  process.exit(2);
}
