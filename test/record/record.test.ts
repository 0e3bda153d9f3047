// The flight recorder end to end: real sessions over a real socket (worker threads) are recorded, then
// replayed offline; frames must come back byte for byte, and what-if must name exactly what changes.

import { copyFile, mkdtemp, readFile, readdir, rm, truncate, writeFile, mkdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as zlib from 'node:zlib';
import { brotliCompressSync, brotliDecompressSync, crc32 } from 'node:zlib';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TreeLibrary } from '../../src/bt/library.js';
import { decode } from '../../src/protocol/index.js';
import { Kind, RecordingReader, RecordingWriter, ReplaySession, verifyRecording, whatIf } from '../../src/record/index.js';
import { Codec, zstdAvailable } from '../../src/record/codec.js';
import { BLOCK_HEADER_BYTES, MAGIC, MAGIC_V1 } from '../../src/record/format.js';
import { http, RawClient, start, type Frame, type Running } from '../service/harness.js';
import { FIELDS, hp, playLockstep } from './game.js';

const TREES = resolve('trees');
let dir: string;
let running: Running;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'canopy-record-'));
  running = await start({ trees: TREES, workers: 2, recordDir: join(dir, 'recordings'), tuning: { recordBlockBytes: 4096 } });
});

afterAll(async () => {
  await running.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * The recording `file` rewritten block by block: as a format 1 file (`v1`: CANOPYR1, 28-byte block headers,
 * Brotli), or as format 2 with every block in `codec` (an unreadable codec byte keeps Brotli bodies).
 */
async function rewrite(file: string, to: 'v1' | Codec): Promise<Buffer> {
  const bytes = await readFile(file);
  expect(bytes.subarray(0, 8).equals(MAGIC)).toBe(true);
  const out: Buffer[] = [to === 'v1' ? MAGIC_V1 : MAGIC];
  for (let at = MAGIC.length; at < bytes.length; ) {
    const head = bytes.subarray(at, at + BLOCK_HEADER_BYTES);
    const body = bytes.subarray(at + BLOCK_HEADER_BYTES, at + BLOCK_HEADER_BYTES + head.readUInt32LE(0));
    at += BLOCK_HEADER_BYTES + body.length;
    const raw = head[28] === Codec.ZSTD ? zstdDecompress(body) : brotliDecompressSync(body);
    const packed = to === Codec.ZSTD && zstdAvailable ? zstdCompress(raw) : brotliCompressSync(raw);
    const h = Buffer.alloc(to === 'v1' ? 28 : BLOCK_HEADER_BYTES);
    head.copy(h, 0, 0, 28);
    h.writeUInt32LE(packed.length, 0);
    h.writeUInt32LE(crc32(packed), 8);
    if (to !== 'v1') h[28] = to;
    out.push(h, packed);
  }
  return Buffer.concat(out);
}

/** node:zlib's zstd (Node ≥ 22.15), untyped in the project's Node 20 type definitions. */
const zstdZlib = zlib as unknown as { zstdCompressSync(b: Uint8Array): Buffer; zstdDecompressSync(b: Uint8Array): Buffer };
const zstdCompress = (b: Uint8Array): Buffer => zstdZlib.zstdCompressSync(b);
const zstdDecompress = (b: Uint8Array): Buffer => zstdZlib.zstdDecompressSync(b);

/** Stops the session's recording (resolves once the file is complete) and returns the first part's path. */
async function stopRecording(session: string): Promise<string> {
  const res = await http(running.base, 'DELETE', `/v1/sessions/${session}/recording`);
  expect(res.status).toBe(200);
  const id = (res.body as { recording: string }).recording;
  return join(dir, 'recordings', `${id}.p001.canopyrec`);
}

let lockstepFile: string;
let liveFrames: Frame[];

describe('lockstep', () => {
  test('a recorded session replays offline to identical decisions frames', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: FIELDS, record: true });
    expect(typeof welcome.recording).toBe('string');
    liveFrames = await playLockstep(client);
    lockstepFile = await stopRecording(welcome.session as string);
    await client.close();

    const report = await verifyRecording(lockstepFile);
    expect(report).toMatchObject({ identical: true, difference: null, truncated: null, ticks: 60, frames: 60, firstTick: 1, lastTick: 60 });
    // The replayed frames are the frames the game received.
    const replay = await ReplaySession.open(lockstepFile);
    const replayed: unknown[] = [];
    while (await replay.next()) replayed.push(decode(replay.frame()!));
    expect(replayed).toEqual(liveFrames.map(({ re: _re, ...f }) => f));
    // The session exercised what the recorder must carry.
    const all = liveFrames.flatMap((f) => [...((f.actions as unknown[]) ?? [])]);
    expect(all.length).toBeGreaterThan(50);
    expect(liveFrames.some((f) => ((f.cancels as unknown[]) ?? []).length > 0)).toBe(true);
    expect(liveFrames.some((f) => ((f.done as unknown[]) ?? []).length > 0)).toBe(true);
  });

  test('on worker threads, pipelined or not, the same frames and verdict', async () => {
    // Decisions come in spawn order whatever the number of workers. Pipelined (the
    // default there: inputs read and applied while the workers tick the tick before) and not.
    for (const opts of [{ workers: 2 }, { workers: 1 }, { workers: 2, pipeline: false }]) {
      expect(await verifyRecording(lockstepFile, opts)).toMatchObject({ identical: true, difference: null, ticks: 60, frames: 60, firstTick: 1, lastTick: 60 });
    }
    // The pipelined session's frames are the game's too: the spawn, bb writes, results and the despawn
    // between ticks are applied at the tick they preceded, while the tick before is still on the workers.
    const pipelined = await ReplaySession.open(lockstepFile, { workers: 2, pipeline: true });
    const onWorkers: unknown[] = [];
    while (await pipelined.next()) onWorkers.push(decode(pipelined.frame()!));
    await pipelined.close();
    expect(onWorkers).toEqual(liveFrames.map(({ re: _re, ...f }) => f));
    expect(pipelined.compared).toBe(60);
    expect(pipelined.difference).toBeNull();
  }, 60_000);

  test('recording on or off changes no frame of the session', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: FIELDS });
    const frames = await playLockstep(client);
    await client.close();
    expect(frames.map(({ re: _re, ...f }) => f)).toEqual(liveFrames.map(({ re: _re, ...f }) => f));
  });

  test('input a resuming connection sends while a frame is ticked in one message is recorded after that tick: replays identical', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: FIELDS, record: true });
    const session = welcome.session as string;
    await client.request({ t: 'spawn', agents: [1, 2, 3].map((id) => ({ id, tree: 'guard' })) }, 'spawned');
    const rows = (t: number): unknown[][] => [1, 2, 3].map((id) => [id, hp(id, t), (id + t) % 3 === 0, (id + t) % 7, [id, t % 5], [id, 0]]);
    for (let t = 1; t <= 3; t++) await client.step({ tick: t, time: t * 0.05, agents: rows(t) });
    // Tick 4's frame goes to the worker with its tick. Before the session hears back, another connection takes the
    // session over and spawns agent 4: it reaches the worker after that tick, so it first ticks at tick 5, and the
    // recording must say so (the spawn's record after tick 4's).
    const pool = running.server.pool;
    const original = pool.tickFrame;
    let taken: ((c: { client: RawClient; ids: unknown }) => void) | undefined;
    const taker = new Promise<{ client: RawClient; ids: unknown }>((done) => (taken = done));
    pool.tickFrame = (...args) => {
      const out = original.apply(pool, args);
      if (out === null || args[0] !== session || args[1] !== 4) return out;
      return out.then(async (ticked) => {
        const { client: other } = await RawClient.hello(running.wsUrl, { resume: welcome.resume });
        const { ids } = await other.request({ t: 'spawn', agents: [{ id: 4, tree: 'guard' }] }, 'spawned');
        taken!({ client: other, ids });
        return ticked;
      });
    };
    let other: RawClient;
    try {
      client.send({ t: 'snapshot', tick: 4, time: 0.2, agents: rows(4) });
      const took = await taker;
      other = took.client;
      expect(took.ids).toEqual([4]);
    } finally {
      pool.tickFrame = original;
    }
    const later: Frame[] = [];
    for (let t = 5; t <= 8; t++) later.push(await other.step({ tick: t, time: t * 0.05, agents: [...rows(t), [4, 100, false, 9, [4, 0], [4, 0]]] }));
    // Agent 4 decided from tick 5 on (its first tick).
    expect(later[0]!.actions as unknown[]).toContainEqual(expect.arrayContaining([4]));
    const file = await stopRecording(session);
    await Promise.all([client.close(), other.close()]);
    expect(await verifyRecording(file)).toMatchObject({ identical: true, difference: null, ticks: 8, firstTick: 1, lastTick: 8 });
  });

  test('seek runs to the end of a tick, backwards too; agents and their engine state are there', async () => {
    const replay = await ReplaySession.open(lockstepFile);
    expect(replay.header).toMatchObject({ mode: 'lockstep', fields: FIELDS, part: 1 });
    expect(replay.firstTick).toBe(1);
    expect(replay.lastTick).toBe(60);
    await replay.seek(40);
    expect(replay.tick).toBe(40);
    expect(decode(replay.frame()!)).toEqual((({ re: _re, ...f }) => f)(liveFrames[39]!));
    expect(replay.agents().map((a) => a.id)).not.toContain(4);
    expect(replay.agents()).toContainEqual({ id: 'f1', tree: 'follower', label: 'Blue/f1' });
    const g3 = replay.agent(3)!;
    expect(g3.bb.waypointCount).toBe(5);
    await replay.seek(5);
    expect(replay.tick).toBe(5);
    expect(replay.agent(9)).toBeNull();
    expect(decode(replay.frame()!)).toEqual((({ re: _re, ...f }) => f)(liveFrames[4]!));
  });

  test('a truncated file replays up to its last complete record', async () => {
    // The server writes 4 KiB blocks: the cut falls in the middle of the session.
    const small = join(dir, 'cut.p001.canopyrec');
    await copyFile(lockstepFile, small);
    const size = (await stat(small)).size;
    await truncate(small, Math.floor(size * 0.6));
    const report = await verifyRecording(small);
    expect(report.identical).toBe(true);
    expect(report.truncated).toMatch(/cut off/);
    expect(report.ticks).toBeLessThan(60);
  });

  test('every block codec, and format 1 files (CANOPYR1, Brotli only), read back and replay identical', async () => {
    const original = [...RecordingReader.open(lockstepFile).records()].map((r) => [r.kind, r.payload.toString('hex')]);
    const asV1 = join(dir, 'v1.p001.canopyrec');
    await writeFile(asV1, await rewrite(lockstepFile, 'v1'));
    expect((await readFile(asV1)).subarray(0, 8).equals(MAGIC_V1)).toBe(true);
    const asBrotli = join(dir, 'brotli.p001.canopyrec');
    await writeFile(asBrotli, await rewrite(lockstepFile, Codec.BROTLI));
    const files = [asV1, asBrotli];
    if (zstdAvailable) {
      const asZstd = join(dir, 'zstd.p001.canopyrec');
      await writeFile(asZstd, await rewrite(lockstepFile, Codec.ZSTD));
      files.push(asZstd);
    }
    for (const file of files) {
      const reader = RecordingReader.open(file);
      expect([...reader.records()].map((r) => [r.kind, r.payload.toString('hex')])).toEqual(original);
      expect(reader.problem).toBeNull();
      expect(reader.index().at(-1)!.lastTick).toBe(60);
      expect(await verifyRecording(file)).toMatchObject({ identical: true, truncated: null, ticks: 60, frames: 60 });
    }
    // A block in a codec this Node cannot read stops with a clear message, not garbage.
    const unknown = join(dir, 'unknown.p001.canopyrec');
    await writeFile(unknown, await rewrite(lockstepFile, 9 as Codec));
    await expect(verifyRecording(unknown)).rejects.toThrow(/unknown codec 9.*newer Canopy/);
  });

  test.skipIf(zstdAvailable)('a zstd recording on a Node without zstd: a clear message, not garbage', async () => {
    const zstd = join(dir, 'nozstd.p001.canopyrec');
    await writeFile(zstd, await rewrite(lockstepFile, Codec.ZSTD));
    await expect(verifyRecording(zstd)).rejects.toThrow(/compressed with zstd.*Node 22\.15 or later/);
  });

  test('what-if: one threshold changed names exactly the agents, ticks and node that change', async () => {
    const changedDir = join(dir, 'changed');
    await mkdir(changedDir);
    for (const f of await readdir(TREES)) await copyFile(join(TREES, f), join(changedDir, f));
    const guard = JSON.parse(await readFile(join(TREES, 'guard.json'), 'utf8')) as { blackboard: Record<string, number> };
    guard.blackboard.fleeBelowHp = 50;
    await writeFile(join(changedDir, 'guard.json'), JSON.stringify(guard));
    const loaded = await TreeLibrary.loadFolder(changedDir);
    if (!loaded.ok) throw new Error('changed trees do not load');
    const report = await whatIf(lockstepFile, loaded.library);

    // Guard i's hp falls below 50 (but not 30) first at tick floor(100 / i) + 1; guard 1 never; guard 10
    // has its own threshold; followers are on an untouched tree.
    const expected = [2, 3, 4, 5, 6, 7, 8, 9].map((i) => ({ id: i, firstTick: Math.floor(100 / i) + 1 })).filter((e) => e.firstTick <= 60);
    for (const e of expected) expect(hp(e.id, e.firstTick)).toBeLessThan(50);
    expect(report.changes.map((c) => ({ id: c.id, firstTick: c.firstTick })).toSorted((a, b) => Number(a.id) - Number(b.id))).toEqual(expected);
    expect(report.treesChanged).toEqual(['guard']);
    for (const c of report.changes) {
      expect(c.tree).toBe('guard');
      expect(c.treeChanged).toBe(true);
      expect(c.divergence).toMatchObject({ path: 'root.children[0]', names: 'guard > flee', changed: 'running' });
      expect(c.changedDecisions.actions.map((a) => a[1])).toContain('flee');
      expect(c.recordedDecisions.actions.map((a) => a[1])).not.toContain('flee');
    }
    expect(report.summary.agentsAffected).toBe(expected.length);
    expect(report.summary.agentsAffectedOnUnchangedTrees).toBe(0);
    expect(report.summary.actions.flee!.added).toBeGreaterThanOrEqual(expected.length);
    expect(report.ticks).toBe(60);

    // The recorded trees against themselves: nothing changes.
    const same = await TreeLibrary.loadFolder(TREES);
    if (!same.ok) throw new Error('trees do not load');
    const none = await whatIf(lockstepFile, same.library);
    expect(none.changes).toEqual([]);
    expect(none.summary).toMatchObject({ agentsAffected: 0, droppedResults: 0, ticksDiffering: 0 });
  });
});

describe('fixed mode', () => {
  test('inputs arriving between ticks replay to identical frames', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'fixed', hz: 50, fields: FIELDS, record: true });
    await client.request({ t: 'spawn', agents: [1, 2, 3, 5, 6, 7, 8].map((id) => ({ id, tree: 'guard' })) }, 'spawned');
    let t = 0;
    let withContent = 0;
    // Each decisions frame is answered at once: the snapshot lands between two service ticks.
    while (withContent < 25) {
      const d = await client.next('decisions');
      const actions = (d.actions as Array<[number, number, string]> | undefined) ?? [];
      if (actions.length > 0) withContent++;
      t++;
      client.send({
        t: 'snapshot',
        tick: t,
        agents: [1, 2, 3, 5, 6, 7, 8].map((id) => [id, hp(id, t * 2), (id + t) % 20 < 8, (id + t) % 7, [id, 0], [0, 0]]),
        results: actions.filter((a) => a[2] !== 'aim').map((a) => [a[0], a[1], 'success']),
      });
    }
    const file = await stopRecording(welcome.session as string);
    await client.close();
    const report = await verifyRecording(file);
    expect(report.identical).toBe(true);
    expect(report.frames).toBeGreaterThanOrEqual(25);
    // On worker threads, pipelined: results and rows read while the tick before is still running.
    for (const workers of [1, 2]) expect(await verifyRecording(file, { workers })).toEqual(report);
  }, 60_000);
});

describe('large spawns', () => {
  // A spawn of more than 1,000 agents is applied in parts (ws.ts), and a fixed-mode tick may fall between two:
  // each part is recorded as it is applied, so the replay ticks the same agents at the same ticks.
  test('a 2,500-agent spawn into a fixed-mode session at 100 Hz replays to identical frames', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'fixed', hz: 100, fields: FIELDS, record: true });
    await client.next('decisions');
    const ids = Array.from({ length: 2500 }, (_, i) => i + 1);
    const spawned = await client.request({ t: 'spawn', agents: ids.map((id) => ({ id, tree: 'guard', seed: id })) }, 'spawned');
    expect((spawned.ids as unknown[]).length).toBe(2500);
    let withActions = 0;
    while (withActions < 2) {
      const d = await client.next('decisions', () => true, 20_000);
      if (((d.actions as unknown[] | undefined) ?? []).length > 0) withActions++;
    }
    const file = await stopRecording(welcome.session as string);
    await client.close();
    const report = await verifyRecording(file);
    expect(report.identical).toBe(true);
    expect(report.frames).toBeGreaterThanOrEqual(2);
  });
});

describe('service', () => {
  test('routes: start and stop on a live session, list, download; no path leaves the folder', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: FIELDS });
    expect(welcome.recording).toBeUndefined();
    const session = welcome.session as string;
    const started = await http(running.base, 'POST', `/v1/sessions/${session}/recording`);
    expect(started.status).toBe(201);
    const again = await http(running.base, 'POST', `/v1/sessions/${session}/recording`);
    expect(again.status).toBe(200);
    expect((again.body as { recording: string }).recording).toBe((started.body as { recording: string }).recording);
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned');
    await client.step({ tick: 1, time: 0.1, agents: [[1, 80, false, 3, [0, 0], [0, 0]]] });
    const listed = await http(running.base, 'GET', '/v1/recordings');
    const id = (started.body as { recording: string }).recording;
    expect((listed.body as { recordings: Array<{ recording: string; active: boolean; session: string }> }).recordings).toContainEqual(
      expect.objectContaining({ recording: id, active: true, session }),
    );
    const file = await stopRecording(session);
    const download = await fetch(`${running.base}/v1/recordings/${id}`);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(await readFile(file))).toBe(true);
    expect((await fetch(`${running.base}/v1/recordings/${id}.p001`)).status).toBe(200);
    for (const bad of ['..%2F..%2Fetc%2Fpasswd', '%2Fetc%2Fpasswd', '..', 'nope']) {
      expect((await fetch(`${running.base}/v1/recordings/${bad}`)).status).toBe(404);
    }
    expect((await http(running.base, 'DELETE', `/v1/sessions/${session}/recording`)).status).toBe(404);
    // A recording never holds the resume token.
    expect((await readFile(file)).includes(Buffer.from(welcome.resume as string))).toBe(false);
    await client.close();
  });

  test('a recording started on a live session with agents says so: their decisions cannot be replayed', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: FIELDS });
    const session = welcome.session as string;
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned');
    await client.step({ tick: 1, time: 0.1, agents: [[1, 80, false, 3, [0, 0], [0, 0]]] });
    expect((await http(running.base, 'POST', `/v1/sessions/${session}/recording`)).status).toBe(201);
    await client.step({ tick: 2, time: 0.2, agents: [[1, 80, true, 3, [0, 0], [0, 0]]] });
    const file = await stopRecording(session);
    const report = await verifyRecording(file);
    expect(report.agentsAtStart).toBe(1);
    expect(report.identical).toBe(false);
    await client.close();
  });

  test('an HTTP lockstep session is recorded (snapshots without wire bytes) and replays identical', async () => {
    const created = await http(running.base, 'POST', '/v1/sessions', { fields: FIELDS });
    const session = (created.body as { session: string }).session;
    expect((await http(running.base, 'POST', `/v1/sessions/${session}/recording`)).status).toBe(201);
    await http(running.base, 'POST', `/v1/sessions/${session}/spawn`, { agents: [{ id: 1, tree: 'guard' }, { id: 'b', tree: 'guard', bb: { fleeBelowHp: 60 } }] });
    const answers: unknown[] = [];
    for (let t = 1; t <= 20; t++) {
      const r = await http(running.base, 'POST', `/v1/sessions/${session}/tick`, {
        tick: t,
        time: t * 0.1,
        world: t === 1 ? { player: [1, 2] } : undefined,
        agents: [[1, 100 - 3 * t, t % 4 === 0, 5, [1, 1], [0, 0]], ['b', 90, false, null, null, [2, 2]]],
      });
      answers.push(r.body);
    }
    const file = await stopRecording(session);
    const report = await verifyRecording(file);
    expect(report).toMatchObject({ identical: true, ticks: 20, frames: 20 });
    const replay = await ReplaySession.open(file);
    let k = 0;
    while (await replay.next()) expect(answers[k++]).toMatchObject(decode(replay.frame()!) as object);
    await http(running.base, 'DELETE', `/v1/sessions/${session}`);
  });

  test('an unwritable folder stops the recording with E_RECORDING and a metric; the session goes on', async () => {
    const blocker = join(dir, 'not-a-folder');
    await writeFile(blocker, 'x');
    const other = await start({ trees: TREES, workers: 0, recordDir: join(blocker, 'recordings') });
    try {
      const { client, welcome } = await RawClient.hello(other.wsUrl, { mode: 'lockstep', fields: FIELDS, record: true });
      expect(typeof welcome.recording).toBe('string');
      const error = await client.next('error');
      expect(error).toMatchObject({ code: 'E_RECORDING' });
      expect(error.message).toMatch(/^recording .* stopped: the recording folder cannot be used \(ENOTDIR\); the session goes on unrecorded$/);
      await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned');
      const d = await client.step({ tick: 1, time: 0.1, agents: [[1, 80, false, 3, [0, 0], [0, 0]]] });
      expect(d.actions).toBeDefined();
      const metrics = await http(other.base, 'GET', '/metrics');
      expect(metrics.body).toMatch(/canopy_recording_failures_total 1/);
      await client.close();
    } finally {
      await other.close();
    }
  });
});

describe('rotation and the folder cap', () => {
  test('CANOPY_RECORD=all with small parts: the parts chain and replay identical from any part', async () => {
    const recordDir = join(dir, 'rotated');
    const other = await start({ trees: TREES, workers: 0, recordDir, record: 'all', recordMaxBytes: 6000, tuning: { recordBlockBytes: 1024 } });
    try {
      const { client, welcome } = await RawClient.hello(other.wsUrl, { mode: 'lockstep', fields: FIELDS });
      expect(typeof welcome.recording).toBe('string');
      await playLockstep(client, 40);
      await client.close();
    } finally {
      await other.close();
    }
    const parts = (await readdir(recordDir)).toSorted();
    expect(parts.length).toBeGreaterThan(2);
    const last = join(recordDir, parts.at(-1)!);
    const report = await verifyRecording(last);
    expect(report).toMatchObject({ identical: true, ticks: 40, frames: 40, truncated: null });
    // The first part gone: a later part says it cannot replay alone.
    await rm(join(recordDir, parts[0]!));
    await expect(verifyRecording(last)).rejects.toThrow(/part 1 .* is gone: a recording replays from its first part/);
  });

  test('CANOPY_RECORD_MAX_TOTAL_BYTES deletes the oldest finished parts, never the one being written', async () => {
    const recordDir = join(dir, 'capped');
    const other = await start({ trees: TREES, workers: 0, recordDir, record: 'all', recordMaxBytes: 3000, recordMaxTotalBytes: 12_000, tuning: { recordBlockBytes: 512 } });
    try {
      const { client } = await RawClient.hello(other.wsUrl, { mode: 'lockstep', fields: FIELDS });
      await playLockstep(client, 40);
      const listing = async (): Promise<Array<{ part: number; bytes: number; active: boolean }>> =>
        ((await http(other.base, 'GET', '/v1/recordings')).body as { recordings: Array<{ part: number; bytes: number; active: boolean }> }).recordings;
      // Parts were written beyond the cap, the first ones were deleted (deletion runs behind the writes:
      // the last part finished may still be waiting for it), the active one is there.
      await expect.poll(async () => (await listing()).map((r) => r.part), { timeout: 10_000 }).not.toContain(1);
      const listed = await listing();
      expect(Math.max(...listed.map((r) => r.part))).toBeGreaterThan(4);
      expect(listed.some((r) => r.active)).toBe(true);
      await client.close();
    } finally {
      await other.close();
    }
  });

  test('a recording that falls behind the disk stops with an error; the writer takes nothing more', async () => {
    const errors: Error[] = [];
    const writer = new RecordingWriter({
      dir: join(dir, 'behind'),
      recording: 'behind',
      maxBytes: 0,
      maxPendingBytes: 100,
      header: { canopy: 'test', session: 's', mode: 'lockstep', hz: 0, fields: null, plugins: [], trees: {}, definitions: {} },
      onError: (err) => errors.push(err),
    });
    writer.bytes(Kind.SNAPSHOT_FRAME, Buffer.alloc(1000));
    writer.flush();
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/^the recording fell behind the session/)]);
    expect(writer.active).toBe(false);
    await writer.close('test');
  });
});
