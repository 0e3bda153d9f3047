// HTTP benchmarks (autocannon): the lockstep-over-HTTP tick route, as turn-based games and scripts drive
// it, and tree validation, as editors and CI call it. Starts the service on 127.0.0.1 (or --url).
//
//   npm run bench:http -- [--connections 8] [--seconds 10] [--agents 100] [--ticks 1000] [--format json|msgpack]
//                         [--workers 2] [--url http://host:port] [--json FILE]
//
// Tick route: each connection plays turn-based games one after another: create a session, spawn
// --agents agents, --ticks ticks (rows change every tick, time advances), delete the session; so ticks
// are ~99.7% of the requests and every session sees its ticks in order.

import autocannon, { type Request, type Result } from 'autocannon';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encode } from '../src/protocol/index.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { existingService, repoRoot, startService, type Target } from './load/service.js';
import { FIELDS, GameWorld } from './load/world.js';
import { RowWriter, type ActionDecision, type CancelDecision } from '../src/client/index.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    connections: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '10' },
    agents: { type: 'string', default: '100' },
    ticks: { type: 'string', default: '1000' },
    format: { type: 'string', default: 'json' },
    workers: { type: 'string', default: '2' },
    url: { type: 'string' },
    'api-key': { type: 'string' },
    json: { type: 'string' },
  },
});

const connections = bounded('connections', values.connections, 1, 1000);
const seconds = bounded('seconds', values.seconds, 1, 600);
const agents = bounded('agents', values.agents, 1, 100_000);
const ticks = bounded('ticks', values.ticks, 1, 1_000_000);
const workers = bounded('workers', values.workers, 0, 64);
const format = values.format;
if (format !== 'json' && format !== 'msgpack') fail(`--format must be json or msgpack, not '${format}'`);
const contentType = format === 'json' ? 'application/json' : 'application/msgpack';
const auth: Record<string, string> = values['api-key'] === undefined ? {} : { authorization: `Bearer ${values['api-key']}` };

/** A request body in the chosen format. */
function body(value: unknown): string | Buffer {
  return format === 'json' ? JSON.stringify(value) : Buffer.from(encode(value));
}

/**
 * One turn-based game per pass over the requests: the context (one per connection, reset after each
 * pass) holds its session and its world. Rows are those of the load generator's world.
 */
function tickRequests(): Request[] {
  const headers = { 'content-type': contentType, accept: contentType, ...auth };
  const create: Request = {
    method: 'POST',
    path: '/v1/sessions',
    headers,
    body: body({ fields: FIELDS }),
    onResponse: (status, text, context) => {
      if (status === 201) context.session = (JSON.parse(format === 'json' ? text : '{}') as { session?: string }).session ?? sessionFromMsgpack(text);
    },
  };
  const spawn: Request = {
    method: 'POST',
    headers,
    setupRequest: (req, context) => {
      const world = new GameWorld(agents, Math.floor(Math.random() * 2 ** 31));
      context.world = world;
      context.rows = new RowWriter(FIELDS);
      context.tick = 0;
      return { ...req, path: `/v1/sessions/${String(context.session)}/spawn`, body: body({ agents: Array.from({ length: agents }, (_, i) => ({ id: i, tree: 'guard' })) }) };
    },
  };
  const tick: Request = {
    method: 'POST',
    headers,
    setupRequest: (req, context) => {
      const world = context.world as GameWorld;
      const rows = context.rows as RowWriter;
      const n = (context.tick as number) + 1;
      context.tick = n;
      world.step(0.05);
      world.writeRows(rows);
      return { ...req, path: `/v1/sessions/${String(context.session)}/tick`, body: body({ tick: n, time: n * 0.05, agents: rows.rows(), results: world.results() }) };
    },
    onResponse: (status, text, context) => {
      if (status !== 200 || format !== 'json') return;
      const d = JSON.parse(text) as { actions?: ActionDecision[]; cancels?: CancelDecision[] };
      (context.world as GameWorld).apply(d.actions ?? [], d.cancels ?? []);
    },
  };
  const remove: Request = {
    method: 'DELETE',
    headers: auth,
    setupRequest: (req, context) => ({ ...req, path: `/v1/sessions/${String(context.session)}` }),
  };
  return [create, spawn, ...Array.from({ length: ticks }, () => tick), remove];
}

/** The session id from a msgpack `201` body, which autocannon hands over as a string. */
function sessionFromMsgpack(text: string): string | undefined {
  return /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/.exec(text)?.[1];
}

interface Row {
  readonly name: string;
  readonly result: Result;
  /** Agent-ticks per request (tick route). */
  readonly agentsPerRequest: number;
}

async function bench(target: Target): Promise<Row[]> {
  const url = target.httpUrl;
  const rows: Row[] = [];
  const guard = readFileSync(join(repoRoot(), 'trees', 'guard.json'), 'utf8');
  const broken = JSON.stringify({ ...JSON.parse(guard), root: { type: 'selector', chidren: [] } });
  const runs: Array<{ name: string; agentsPerRequest: number; options: Parameters<typeof autocannon>[0] }> = [
    {
      name: `POST /v1/sessions/:id/tick (${agents} agents, ${format})`,
      agentsPerRequest: agents,
      options: { url, connections, pipelining: 1, duration: seconds, requests: tickRequests() },
    },
    {
      name: 'POST /v1/trees/validate (guard.json, valid)',
      agentsPerRequest: 0,
      options: { url: `${url}/v1/trees/validate`, connections, pipelining: 1, duration: seconds, method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: guard },
    },
    {
      name: 'POST /v1/trees/validate (1 error)',
      agentsPerRequest: 0,
      options: { url: `${url}/v1/trees/validate`, connections, pipelining: 1, duration: seconds, method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: broken },
    },
  ];
  for (const r of runs) {
    process.stderr.write(`${r.name}: ${connections} connections, ${seconds} s...\n`);
    const cpu = process.cpuUsage();
    const before = await target.sample();
    const result = await autocannon(r.options);
    const after = await target.sample();
    const used = process.cpuUsage(cpu);
    process.stderr.write(
      `  service ${((after.cpuSeconds - before.cpuSeconds) / ((after.at - before.at) / 1000)).toFixed(2)} cores, autocannon ${((used.user + used.system) / 1e6 / result.duration).toFixed(2)} cores\n`,
    );
    rows.push({ name: r.name, result, agentsPerRequest: r.agentsPerRequest });
  }
  return rows;
}

const machine = machineInfo();
console.log('Canopy HTTP benchmarks (autocannon)');
console.log(formatMachine(machine));
const target = values.url !== undefined ? await existingService(values.url, values['api-key']) : await startService({ workers });
let results: Row[];
try {
  results = await bench(target);
} finally {
  await target.stop();
}
console.log(`target: ${values.url ?? `a service started on 127.0.0.1 with ${workers} workers`}; ${connections} connections, pipelining 1, ${seconds} s per route`);
console.log();
console.log(
  formatTable([
    ['route', 'req/s', 'agent-ticks/s', 'latency p50 ms', 'p99 ms', 'max ms', 'MB/s', 'non-2xx', 'errors'],
    ...results.map((r) => [
      r.name,
      r.result.requests.average.toFixed(0),
      r.agentsPerRequest === 0 ? '-' : (r.result.requests.average * r.agentsPerRequest).toFixed(0),
      r.result.latency.p50.toFixed(1),
      r.result.latency.p99.toFixed(1),
      r.result.latency.max.toFixed(0),
      (r.result.throughput.average / 2 ** 20).toFixed(2),
      String(r.result.non2xx),
      String(r.result.errors + r.result.timeouts),
    ]),
  ]),
);
console.log('The tick route includes, per connection and per game, 1 create + 1 spawn + 1 delete request for every --ticks ticks.');
if (values.json !== undefined) {
  writeFileSync(
    values.json,
    `${JSON.stringify(
      {
        node: machine.node,
        machine,
        workers,
        connections,
        seconds,
        agents,
        format,
        routes: results.map((r) => ({
          route: r.name,
          requestsPerSec: r.result.requests.average,
          agentTicksPerSec: r.result.requests.average * r.agentsPerRequest,
          latencyMs: { p50: r.result.latency.p50, p99: r.result.latency.p99, max: r.result.latency.max },
          bytesPerSec: r.result.throughput.average,
          non2xx: r.result.non2xx,
          errors: r.result.errors + r.result.timeouts,
        })),
      },
      null,
      2,
    )}\n`,
  );
}
if (results.some((r) => r.result.errors + r.result.timeouts > 0 || r.result.non2xx > 0)) process.exitCode = 1;

function bounded(name: string, text: string | undefined, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) fail(`--${name} must be an integer from ${min} to ${max}, not '${String(text)}'`);
  return n;
}

function fail(message: string): never {
  console.error(`bench:http: ${message}`);
  process.exit(2);
}
