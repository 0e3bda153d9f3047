// Checkpoint packing A/B: this build's packAgents (B) against another build's (A, `--baseline DIR`: a checkout with
// its own `npm run build` done), on the same agents, alternating in one process, in the process's CPU time. The agents
// are `guard` agents of this build with the load generator's observations (hp, enemyVisible, enemyDist, enemyPos
// [x, y]), ticked first so that their numeric slots hold what a game leaves there. On a shared machine a busy moment
// slows both builds alike; the report gives the medians and the median of the pack-by-pack ratios.
// Without `--baseline`, this build alone. `--forms`: this build's two forms instead (checkpoint.ts, CheckpointForm):
// A portable (v8.serialize into new memory), B local with each pack's memory given back before the next, as the
// main thread gives back a replaced checkpoint's. Run it as the service runs (Node 26, MALLOC_MMAP_THRESHOLD_=131072):
// new memory costs what the kernel takes to fault it in.
//
//   npm run build && node dist/bench/checkpoint-ab.js [--baseline /tmp/canopy-base | --forms] [--agents 25000] [--packs 80]
//   (a baseline: `git worktree add /tmp/canopy-base <rev> && cd /tmp/canopy-base && ln -s $PWD/node_modules . && npm run build`)

import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, TreeLibrary, type DecisionSink } from '../src/bt/index.js';
import { giveCheckpointMemory, packAgents } from '../src/service/pool/checkpoint.js';
import { repoRoot } from './load/service.js';
import { formatMachine, formatTable, machineInfo, median } from './lib/machine.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    baseline: { type: 'string' },
    forms: { type: 'boolean', default: false },
    agents: { type: 'string', default: '25000' },
    packs: { type: 'string', default: '80' },
  },
});
const agents = Number(values.agents);
const packs = Number(values.packs);
if (!Number.isInteger(agents) || agents < 1) fail(`--agents: expected an integer ≥ 1, got '${values.agents}'`);
if (!Number.isInteger(packs) || packs < 10) fail(`--packs: expected an integer ≥ 10, got '${values.packs}'`);

type Pack = typeof packAgents;
const builds: Array<{ label: string; pack: Pack; ms: number[]; bytes: number }> = [];
if (values.baseline !== undefined && values.forms) fail('--baseline and --forms: one or the other');
/** The local form, each pack's memory given back before the next one (recovery.ts: a replaced checkpoint's buffer). */
let lastLocal: Uint8Array | null = null;
const packLocal: Pack = (agentList, fields, world) => {
  if (lastLocal !== null) giveCheckpointMemory([lastLocal.buffer as ArrayBuffer]);
  lastLocal = packAgents(agentList, fields, world, null, Number.NaN, 'local');
  return lastLocal;
};
if (values.forms) {
  builds.push({ label: 'A (portable)', pack: packAgents, ms: [], bytes: 0 }, { label: 'B (local, memory given back)', pack: packLocal, ms: [], bytes: 0 });
} else if (values.baseline !== undefined) {
  const file = join(resolve(values.baseline), 'dist', 'src', 'service', 'pool', 'checkpoint.js');
  if (!existsSync(file)) fail(`no ${file}: run npm run build in the baseline first`);
  const base = (await import(pathToFileURL(file).href)) as { packAgents: Pack };
  builds.push({ label: 'A (baseline)', pack: base.packAgents, ms: [], bytes: 0 });
}
if (!values.forms) builds.push({ label: values.baseline === undefined ? 'this build' : 'B (this build)', pack: packAgents, ms: [], bytes: 0 });

const loaded = await TreeLibrary.loadFolder(join(repoRoot(), 'trees'));
if (!loaded.ok) fail('the bundled trees do not load');
const tree = loaded.library.get('guard');
if (tree === undefined) fail('no tree guard in trees/');
/** The load generator's fields, in its order (bench/load: a lockstep game's snapshot rows). */
const FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos'];
const sink: DecisionSink = { action() {}, cancel() {}, finished() {}, error() {}, log() {} };
const population: Agent[] = [];
for (let i = 0; i < agents; i++) population.push(new Agent(tree, 1_000_000 + i * 7));
for (let t = 0; t < 30; t++) {
  for (let i = 0; i < agents; i++) {
    // As the frame reader builds an observation: a fresh object, the fields in order, a position as a new array.
    const o: Record<string, unknown> = {};
    o.hp = 20 + ((i * 7 + t) % 80);
    o.enemyVisible = (i + t) % 3 === 0;
    o.enemyDist = ((i * 13 + t) % 100) / 7;
    o.enemyPos = [i * 0.5 + t, i * 0.25];
    population[i]!.setPlainSelf(o);
    population[i]!.tick(t * 0.05, 0.05, sink);
  }
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const versus = values.forms ? ' A/B: the two forms of this build' : values.baseline !== undefined ? ` A/B: A = ${resolve(values.baseline)}, B = this build` : '';
console.log(`Checkpoint packing${versus}; ${agents} guard agents, ${packs} packs per build (the first ${Math.floor(packs / 4)} not counted), process CPU time`);
console.log(formatMachine(machineInfo()));
for (let r = 0; r < packs; r++) {
  for (const b of r % 2 === 0 ? builds : builds.toReversed()) {
    const started = cpuMs();
    const bytes = b.pack(population, FIELDS, null);
    b.ms.push(cpuMs() - started);
    b.bytes = bytes.length;
  }
}
const skip = Math.floor(packs / 4);
console.log();
console.log(
  formatTable([
    ['', 'median ms a pack', 'µs an agent', 'bytes', 'bytes an agent'],
    ...builds.map((b) => {
      const ms = median(b.ms.slice(skip));
      return [b.label, ms.toFixed(2), ((ms * 1000) / agents).toFixed(3), String(b.bytes), (b.bytes / agents).toFixed(1)];
    }),
  ]),
);
if (builds.length === 2) {
  const [a, b] = builds as [(typeof builds)[0], (typeof builds)[0]];
  const ratios = b.ms.slice(skip).map((x, k) => x / a.ms[skip + k]!);
  console.log(`\nB ÷ A: ${(median(b.ms.slice(skip)) / median(a.ms.slice(skip))).toFixed(3)} (medians), ${median(ratios).toFixed(3)} (median of the pack-by-pack ratios)`);
}
console.log(`load average at the end: ${machineInfo().load.toFixed(2)}`);

function fail(message: string): never {
  console.error(`checkpoint-ab: ${message}`);
  process.exit(2);
}
