// What a spawn costs the service, per agent, end to end: starts the built service on loopback (as the load
// generator does), connects one lockstep game server with the client library, and repeats: spawn N agents in one
// message, one lockstep tick of them, despawn them all. Each phase's CPU is read by thread from /proc (the main
// thread; the worker threads; the rest: V8's helpers, libuv) around it and summed over the rounds, so the coarse
// clock of /proc averages out. Per id style (dense integers, sparse integers, strings).
//
//   npm run build && node dist/bench/spawn-cost.js [--agents 2500] [--rounds 300] [--service-node PATH]

import { CanopyClient } from '../src/client/index.js';
import type { AgentId } from '../src/protocol/index.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { agentIds, ID_STYLES } from './load/ids.js';
import { readThreads, startService, type ThreadCpu } from './load/service.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '2500' },
    rounds: { type: 'string', default: '300' },
    'service-node': { type: 'string' },
  },
});
const N = Number(values.agents);
const ROUNDS = Number(values.rounds);
if (!Number.isInteger(N) || N < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error('spawn-cost: --agents and --rounds must be positive integers');
  process.exit(2);
}
const FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos'];

/** CPU seconds by part: main thread, every worker thread together, the rest. */
interface Cpu {
  main: number;
  workers: number;
  other: number;
}

function totals(t: ThreadCpu | undefined): Cpu {
  if (t === undefined) throw new Error('spawn-cost: no /proc for the service (Linux only)');
  let workers = 0;
  for (const s of t.workers.values()) workers += s;
  return { main: t.main, workers, other: t.other };
}

function add(sum: Cpu, before: Cpu, after: Cpu): void {
  sum.main += after.main - before.main;
  sum.workers += after.workers - before.workers;
  sum.other += after.other - before.other;
}

const machine = machineInfo();
console.log(`Canopy: what spawning costs the service, per agent (spawns of ${N} agents in one message, ${ROUNDS} rounds per id style, tree guard, 2 workers)`);
console.log(formatMachine(machine));
console.log(`service: ${values['service-node'] ?? process.execPath}`);
const target = await startService({ workers: 2, ...(values['service-node'] !== undefined ? { node: values['service-node'] } : {}) });
const rows: string[][] = [];
try {
  const pid = target.pid!;
  const sample = (): Cpu => totals(readThreads(pid));
  /** `rounds` rounds of spawn, tick, despawn in id style `style`; the CPU of the spawns and of the despawns. */
  const play = async (style: (typeof ID_STYLES)[number], first: number, rounds: number): Promise<{ spawn: Cpu; despawn: Cpu }> => {
    const client = await CanopyClient.connect(target.wsUrl, { mode: 'lockstep', fields: FIELDS, reconnect: false });
    const spawn: Cpu = { main: 0, workers: 0, other: 0 };
    const despawn: Cpu = { main: 0, workers: 0, other: 0 };
    for (let r = 0; r < rounds; r++) {
      const ids: AgentId[] = agentIds(style, first + r, N) ?? Array.from({ length: N }, (_, i) => i);
      let before = sample();
      const out = await client.spawn(ids.map((id) => ({ id, tree: 'guard' })));
      add(spawn, before, sample());
      if (out.errors.length > 0) throw new Error(`spawn refused: ${out.errors[0]!.code} ${out.errors[0]!.message}`);
      // Not counted: the agents' first tick (the workers' tick is what the load generator measures).
      await client.lockstep({ tick: r + 1, time: (r + 1) * 0.05, agents: ids.slice(0, 16).map((id) => [id, 50, false, null, null]) });
      before = sample();
      const gone = await client.despawn(ids);
      add(despawn, before, sample());
      if (gone.ids.length !== N) throw new Error(`despawn removed ${gone.ids.length} of ${N}`);
    }
    await client.close();
    return { spawn, despawn };
  };
  // Warm-up: every style a quarter of the rounds first, so the first style measured does not pay for V8's compiling.
  for (const [k, style] of ID_STYLES.entries()) await play(style, (k + 3) * ROUNDS, Math.ceil(ROUNDS / 4));
  for (const [k, style] of ID_STYLES.entries()) {
    const { spawn, despawn } = await play(style, k * ROUNDS, ROUNDS);
    const us = (s: number): string => ((s * 1e6) / (ROUNDS * N)).toFixed(2);
    rows.push([style, us(spawn.main), us(spawn.workers), us(spawn.other), us(despawn.main), us(despawn.workers)]);
  }
} finally {
  await target.stop();
}
console.log();
console.log(formatTable([['ids', 'spawn: main µs/agent', 'workers', 'other threads', 'despawn: main', 'workers'], ...rows]));
console.log();
console.log('CPU time by thread from /proc around each spawn (send → spawned) and despawn (send → despawned), summed over the rounds;');
console.log('the workers create agents in slices after the spawn is answered, so their share of a spawn partly lands in later phases.');
