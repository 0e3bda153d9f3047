// Issue 10's durable-session figures (docs/durability.md, "Across instances"), against a real redis-server started
// here on a free port:
//
// 1. Fail-over time: a lockstep session (--failover-agents, 10 ticks) on instance X, a real process; X is killed
//    (SIGKILL); the client (the TypeScript SDK with the list of URLs) resumes on the next instance, which adopts the
//    session once X's lease has expired. Measured: SIGKILL → the first decisions from the other instance (the next
//    tick's lockstep promise resolving). --trials trials; the instance for the next trial starts while one runs.
// 2. Bytes written to Redis per agent-tick (log entries and checkpoints, from canopy_durable_bytes_total), and
// 3. checkpoint + log cost: two in-process servers (2 workers each) play the same lockstep game (--agents, time
//    advancing 50 ms a tick, so a checkpoint every 40 ticks), one without Redis, one with; blocks of 40 ticks
//    alternate between them (A/B in one run); process CPU (every thread) per tick, median of blocks.
//
//   npx tsx bench/failover.ts [--agents 10000] [--blocks 6] [--trials 20] [--failover-agents 1000] [--lease-ms 1000]

import { performance } from 'node:perf_hooks';
import { CanopyClient } from '../src/client/index.js';
import { start, writeFixture, type Running } from '../test/service/harness.js';
import { FIELDS, Game, TREES } from '../test/durable/game.js';
import { metric, startInstance, startRedis, type Instance } from '../test/durable/procs.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '10000' },
    blocks: { type: 'string', default: '6' },
    trials: { type: 'string', default: '20' },
    'failover-agents': { type: 'string', default: '1000' },
    'lease-ms': { type: 'string', default: '1000' },
    'skip-failover': { type: 'boolean', default: false },
    'skip-cost': { type: 'boolean', default: false },
  },
});
const agents = Number(values.agents);
const blocks = Number(values.blocks);
const trials = Number(values.trials);
const failoverAgents = Number(values['failover-agents']);
const leaseMs = Number(values['lease-ms']);
const BLOCK = 40;

const quantile = (xs: readonly number[], q: number): number => {
  const s = xs.toSorted((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? Number.NaN;
};
const med = (xs: readonly number[]): number => quantile(xs, 0.5);

console.log(formatMachine(machineInfo()));
const fixture = await writeFixture(TREES);
const redis = await startRedis();

async function failover(): Promise<void> {
  const env = { CANOPY_TREES: fixture.trees, CANOPY_WORKERS: '1', CANOPY_REDIS_URL: redis.url, CANOPY_REDIS_LEASE_MS: String(leaseMs) };
  let owner: Instance = await startInstance(env);
  let next: Promise<Instance> = startInstance(env);
  const times: number[] = [];
  /** On the heir: from the hello with the token to the session restored (lease wait, load, import, replay). */
  const adoptMs: number[] = [];
  /** Of which, once the lease was taken: load from Redis, import, replay. */
  const restoreMs: number[] = [];
  for (let t = 0; t < trials; t++) {
    const heir = await next;
    const client = await CanopyClient.connect([owner.wsUrl, heir.wsUrl], { mode: 'lockstep', fields: FIELDS, reconnect: { minDelayMs: 20, maxDelayMs: 200 }, requestTimeoutMs: 60_000 });
    const game = new Game(failoverAgents);
    await game.spawn(client);
    for (let tick = 1; tick <= 10; tick++) await game.tick(client, tick);
    if (process.env.BENCH_DEBUG) console.error(`trial ${t}: 10 ticks on ${owner.port}`);
    // The next trial's heir starts now, while this trial's fail-over runs.
    next = startInstance(env);
    const killed = performance.now();
    owner.proc.kill('SIGKILL');
    const watchdog = setTimeout(() => console.error(`trial ${t} stuck:\n${owner.proc.output().slice(-3000)}\n--- heir\n${heir.proc.output().slice(-3000)}`), 20_000);
    await game.tick(client, 11);
    clearTimeout(watchdog);
    times.push(performance.now() - killed);
    const restored = /"restoreMs":(\d+),"ms":(\d+),/.exec(heir.proc.output().split('\n').filter((l) => l.includes('durable session restored')).at(-1) ?? '');
    if (restored !== null) {
      restoreMs.push(Number(restored[1]));
      adoptMs.push(Number(restored[2]));
    }
    await owner.proc.exit;
    await client.bye();
    owner = heir;
  }
  owner.proc.kill('SIGKILL');
  (await next).proc.kill('SIGKILL');
  console.log(`\n1. Fail-over: SIGKILL of the owner → first decisions from the other instance (${failoverAgents} agents, lease ${leaseMs} ms, ${trials} trials)`);
  console.log(formatTable([
    ['', 'median', 'p99', 'min', 'max'],
    ['SIGKILL → decisions, ms', quantile(times, 0.5).toFixed(0), quantile(times, 0.99).toFixed(0), Math.min(...times).toFixed(0), Math.max(...times).toFixed(0)],
    ['of which hello → restored (lease wait + restore), ms', quantile(adoptMs, 0.5).toFixed(0), quantile(adoptMs, 0.99).toFixed(0), Math.min(...adoptMs).toFixed(0), Math.max(...adoptMs).toFixed(0)],
    ['of which lease taken → restored (load, import, replay), ms', quantile(restoreMs, 0.5).toFixed(0), quantile(restoreMs, 0.99).toFixed(0), Math.min(...restoreMs).toFixed(0), Math.max(...restoreMs).toFixed(0)],
  ]));
}

/** One in-process server and its game, ticked in blocks. */
class Side {
  readonly cpu: number[] = [];
  readonly wall: number[] = [];
  tick = 0;
  constructor(
    readonly label: string,
    readonly running: Running,
    readonly client: CanopyClient,
    readonly game: Game,
  ) {}

  static async open(label: string, running: Running): Promise<Side> {
    const client = await CanopyClient.connect(running.wsUrl, { mode: 'lockstep', fields: FIELDS, reconnect: false, requestTimeoutMs: 120_000 });
    const game = new Game(agents);
    await game.spawn(client);
    return new Side(label, running, client, game);
  }

  async block(record: boolean): Promise<void> {
    const cpu = process.cpuUsage();
    const wall = performance.now();
    for (let k = 0; k < BLOCK; k++) await this.game.tick(this.client, ++this.tick);
    const used = process.cpuUsage(cpu);
    if (!record) return;
    this.cpu.push((used.user + used.system) / 1000 / BLOCK);
    this.wall.push((performance.now() - wall) / BLOCK);
  }
}

async function cost(): Promise<void> {
  const off = await Side.open('without Redis', await start({ trees: fixture.trees, workers: 2 }));
  const on = await Side.open('with Redis', await start({ trees: fixture.trees, workers: 2, redisUrl: redis.url }));
  const noWait = await Side.open('with Redis, no write-ahead (CANOPY_REDIS_WAIT_MS=0)', await start({ trees: fixture.trees, workers: 2, redisUrl: redis.url, redisWaitMs: 0 }));
  // One block each to warm up, then alternating blocks.
  await off.block(false);
  await on.block(false);
  await noWait.block(false);
  const logBefore = (await metric(on.running.base, 'canopy_durable_bytes_total{kind="log"}')) ?? 0;
  const ckptBefore = (await metric(on.running.base, 'canopy_durable_bytes_total{kind="checkpoint"}')) ?? 0;
  const ticksBefore = on.tick;
  for (let b = 0; b < blocks; b++) {
    const order = b % 2 === 0 ? [off, on, noWait] : [noWait, on, off];
    for (const side of order) await side.block(true);
  }
  const ticks = on.tick - ticksBefore;
  const log = ((await metric(on.running.base, 'canopy_durable_bytes_total{kind="log"}')) ?? 0) - logBefore;
  const ckpt = ((await metric(on.running.base, 'canopy_durable_bytes_total{kind="checkpoint"}')) ?? 0) - ckptBefore;
  const checkpoints = (await metric(on.running.base, 'canopy_durable_checkpoints_total')) ?? 0;
  const degraded = await metric(on.running.base, 'canopy_durable_degradations_total');
  console.log(`\n2. Bytes written to Redis (${agents} agents, ${ticks} ticks, rows of 1 field a tick, results, a checkpoint every 40 ticks)`);
  console.log(formatTable([
    ['', 'bytes', 'per agent-tick'],
    ['log entries', String(log), (log / agents / ticks).toFixed(1)],
    ['checkpoints', String(ckpt), (ckpt / agents / ticks).toFixed(1)],
    ['total', String(log + ckpt), ((log + ckpt) / agents / ticks).toFixed(1)],
  ]));
  console.log(`checkpoints stored so far: ${checkpoints}; degradations: ${degraded ?? 0}`);
  console.log(`\n3. Checkpoint + log cost (${agents} agents, 2 workers each, ${blocks} alternating blocks of ${BLOCK} ticks)`);
  console.log(formatTable([
    ['', 'CPU ms/tick (median)', 'wall ms/tick (median)'],
    [off.label, med(off.cpu).toFixed(2), med(off.wall).toFixed(2)],
    [on.label, med(on.cpu).toFixed(2), med(on.wall).toFixed(2)],
    [noWait.label, med(noWait.cpu).toFixed(2), med(noWait.wall).toFixed(2)],
    ['ratio with/without', (med(on.cpu) / med(off.cpu)).toFixed(3), (med(on.wall) / med(off.wall)).toFixed(3)],
    ['ratio no write-ahead/without', (med(noWait.cpu) / med(off.cpu)).toFixed(3), (med(noWait.wall) / med(off.wall)).toFixed(3)],
  ]));
  const pairs = off.cpu.map((c, i) => on.cpu[i]! - c);
  console.log(`paired blocks, CPU with − without: ${Math.min(...pairs).toFixed(2)} … ${Math.max(...pairs).toFixed(2)} ms (mean ${(pairs.reduce((a, b) => a + b, 0) / pairs.length).toFixed(2)} ms)`);
  for (const side of [off, on, noWait]) {
    await side.client.bye();
    await side.running.close();
  }
}

try {
  if (!values['skip-failover']) await failover();
  if (!values['skip-cost']) await cost();
} finally {
  await redis.stop();
  await fixture.remove();
}
console.log(`\nload average at the end: ${machineInfo().load.toFixed(2)}`);
