// What a game server pays to build and encode its snapshots with the SDK: the load generator's world
// (bench/load/world.ts) writes its rows, and each snapshot is built three ways in alternating rounds of the same run —
// rows into a RowWriter and the codec on the whole message (msgpackr; the SDK before round thirty), rows into a
// RowWriter and the SDK's row encoder (spliced after the rest of the message into pooled memory, given back once the
// socket has written it out: what CanopyClient.snapshot does), and rows straight into bytes with a RowEncoder (round
// thirty-three). All three give the same bytes; the run checks that too. CPU time per row, filling the rows included,
// median over the rounds.
//
//   npm run build && node dist/bench/client-rows.js [--agents 25000] [--rounds 60]

import { RowEncoder, RowWriter } from '../src/client/index.js';
import { FrameBuffers } from '../src/client/frame-buffers.js';
import { encode, encodeRows, joinMap } from '../src/protocol/index.js';
import { benchArgs, intArg } from './lib/args.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { FIELDS, GameWorld } from './load/world.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '25000' },
    rounds: { type: 'string', default: '60' },
  },
});
const N = intArg(values, 'agents', 1);
const ROUNDS = intArg(values, 'rounds', 2);

const AGENTS_KEY = Buffer.from(encode('agents'));
const world = new GameWorld(N, 7);
const rows = new RowWriter(FIELDS);
const encoder = new RowEncoder(FIELDS);

/** The world's next tick and the head of its snapshot (as the SDK builds it); the rows are each way's own. */
function nextSnapshot(tick: number): Record<string, unknown> {
  world.step(0.05);
  const head: Record<string, unknown> = { t: 'snapshot', tick, time: world.time };
  const results = world.results();
  if (results.length > 0) head.results = results;
  return head;
}

const frames = new FrameBuffers();
const ways = {
  codec: (head: Record<string, unknown>): Buffer => {
    world.writeRows(rows);
    return encode({ ...head, agents: rows.rows() });
  },
  sdk: (head: Record<string, unknown>): Buffer => {
    world.writeRows(rows);
    return joinMap(head, 1, [AGENTS_KEY, encodeRows(rows.rows())], frames.take);
  },
  encoder: (head: Record<string, unknown>): Buffer => {
    world.writeEncodedRows(encoder);
    return joinMap(head, 1, [AGENTS_KEY, encoder.bytes()], frames.take);
  },
};
type Way = keyof typeof ways;
const ORDERS: readonly (readonly Way[])[] = [
  ['codec', 'sdk', 'encoder'],
  ['encoder', 'codec', 'sdk'],
  ['sdk', 'encoder', 'codec'],
];

const cpuNs: Record<Way, number[]> = { codec: [], sdk: [], encoder: [] };
let bytes = 0;
let tick = 0;
// The first rounds compile the code (JIT): not counted. Each round encodes 10 snapshots one way, then the next 10 the other.
for (let round = -6; round < ROUNDS; round++) {
  for (const way of ORDERS[(round + 6) % ORDERS.length]!) {
    let spent = 0;
    for (let k = 0; k < 10; k++) {
      const head = nextSnapshot(++tick);
      const before = process.cpuUsage();
      const frame = ways[way](head);
      const used = process.cpuUsage(before);
      spent += (used.user + used.system) * 1000;
      bytes += frame.length;
      if (k === 0 && round < -3) {
        world.writeRows(rows);
        if (!frame.equals(encode({ ...head, agents: rows.rows() }))) throw new Error(`client-rows: ${way} wrote other bytes than the codec`);
      }
      // Written out: the socket lets go of the frame.
      frames.hold(frame);
      frames.release(frame);
    }
    if (round >= 0) cpuNs[way].push(spent / 10 / N);
  }
}

function median(list: number[]): number {
  const sorted = list.toSorted((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

console.log('Canopy SDK: encoding snapshots');
console.log(formatMachine(machineInfo()));
console.log(`${N} rows a snapshot (fields ${FIELDS.join(', ')}), ${Math.round(bytes / tick)} bytes; ${ROUNDS} rounds of 10 snapshots each way, alternating\n`);
const codec = median(cpuNs.codec);
const sdk = median(cpuNs.sdk);
const direct = median(cpuNs.encoder);
console.log(
  formatTable([
    ['rows filled and encoded', 'CPU ns per row, median', 'per snapshot ms'],
    ['RowWriter + codec (msgpackr, the whole message)', codec.toFixed(1), ((codec * N) / 1e6).toFixed(2)],
    ['RowWriter + SDK (row encoder, splice, pooled memory)', sdk.toFixed(1), ((sdk * N) / 1e6).toFixed(2)],
    ['RowEncoder (straight into bytes, splice, pooled memory)', direct.toFixed(1), ((direct * N) / 1e6).toFixed(2)],
    ['RowWriter + SDK ÷ codec', (sdk / codec).toFixed(2), ''],
    ['RowEncoder ÷ RowWriter + SDK', (direct / sdk).toFixed(2), ''],
  ]),
);
