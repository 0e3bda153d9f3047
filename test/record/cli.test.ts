// The built `canopy` command as a child process: validate, replay (exact and what-if, human and JSON,
// exit codes), convert (XML out and back in), and serve. Needs `npm run build` first (npm test builds).

import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { decode, encode } from '../../src/protocol/index.js';
import { Kind, RecordingReader, RecordingWriter, type RecordingHeader } from '../../src/record/index.js';
import { http, RawClient, start } from '../service/harness.js';
import { FIELDS, playLockstep } from './game.js';

const CLI = resolve('dist/src/cli/main.js');
const TREES = resolve('trees');
let dir: string;
let recording: string;
let changedTrees: string;

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      done({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'canopy-cli-'));
  const server = await start({ trees: TREES, workers: 0, recordDir: join(dir, 'recordings') });
  try {
    const { client, welcome } = await RawClient.hello(server.wsUrl, { mode: 'lockstep', fields: FIELDS, record: true });
    await playLockstep(client, 40);
    const stopped = await http(server.base, 'DELETE', `/v1/sessions/${welcome.session as string}/recording`);
    recording = join(dir, 'recordings', `${(stopped.body as { recording: string }).recording}.p001.canopyrec`);
    await client.close();
  } finally {
    await server.close();
  }
  changedTrees = join(dir, 'changed');
  await mkdir(changedTrees);
  for (const f of await readdir(TREES)) await copyFile(join(TREES, f), join(changedTrees, f));
  const guard = JSON.parse(await readFile(join(TREES, 'guard.json'), 'utf8')) as { blackboard: Record<string, number> };
  guard.blackboard.fleeBelowHp = 50;
  await writeFile(join(changedTrees, 'guard.json'), JSON.stringify(guard));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('canopy validate', () => {
  test('valid folder: exit 0', async () => {
    const r = await run(['validate', TREES]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/4 trees valid/);
  });

  test("invalid folder: the engine's errors (file, JSON path, message), exit 1", async () => {
    const bad = join(dir, 'bad');
    await mkdir(bad);
    await writeFile(join(bad, 'broken.json'), JSON.stringify({ root: { type: 'sequence', children: [{ type: 'sequnce' }] } }));
    const r = await run(['validate', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/broken\.json:1:40: root\.children\[0\].*sequnce/);
  });
});

describe('canopy replay', () => {
  test('exact replay: identical, exit 0; --json is one object', async () => {
    const human = await run(['replay', recording]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^identical: 40 decisions frames of 40 ticks \(ticks 1–40\)/);
    const json = await run(['replay', recording, '--json', '--from', '10', '--to', '20']);
    expect(JSON.parse(json.stdout)).toMatchObject({ identical: true, ticks: 11, firstTick: 10, lastTick: 20 });
    const onWorkers = await run(['replay', recording, '--json', '--from', '10', '--to', '20', '--workers', '2']);
    expect(JSON.parse(onWorkers.stdout)).toEqual(JSON.parse(json.stdout));
  });

  test('a recorded frame that the trees would not produce: exit 1 with the first difference', async () => {
    const reader = RecordingReader.open(recording);
    const tampered = join(dir, 'tampered');
    const writer = new RecordingWriter({
      dir: tampered,
      recording: 'tampered',
      maxBytes: 0,
      header: reader.header as Omit<RecordingHeader, 'format' | 'part' | 'startedAt' | 'recording'>,
      onError: (err) => {
        throw err;
      },
    });
    let tick = 0;
    for (const { kind, payload } of reader.records()) {
      if (kind === Kind.HEADER || kind === Kind.END) continue;
      if (kind === Kind.DECISIONS) {
        const frame = decode(payload) as { tick: number; actions?: unknown[][] };
        tick++;
        if (frame.tick === 7) frame.actions = [...(frame.actions ?? []), [1, 999, 'dance', null]];
        writer.bytes(kind, encode(frame));
      } else writer.bytes(kind, payload);
    }
    await writer.close('test');
    expect(tick).toBe(40);
    const r = await run(['replay', join(tampered, 'tampered.p001.canopyrec')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^DIFFERENT at tick 7/);
    expect(r.stdout).toMatch(/dance/);
    // The same first difference on worker threads (pipelined: tick 8 is already running when 7 is compared).
    const onWorkers = await run(['replay', join(tampered, 'tampered.p001.canopyrec'), '--workers', '2', '--json']);
    expect(onWorkers.code).toBe(1);
    expect(JSON.parse(onWorkers.stdout)).toMatchObject({ identical: false, difference: { tick: 7 } });
  });

  test('what-if: a table by default, JSON with --json, --fail-on-change for CI gates', async () => {
    const human = await run(['replay', recording, '--trees', changedTrees]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/trees changed: guard/);
    expect(human.stdout).toMatch(/guard > flee \(root\.children\[0\]\)/);
    expect(human.stdout).toMatch(/^flee\s+\d+/m);
    const json = await run(['replay', recording, '--trees', changedTrees, '--json']);
    const report = JSON.parse(json.stdout) as { changes: Array<{ id: number; firstTick: number }>; summary: { agentsAffectedOnUnchangedTrees: number } };
    expect(report.changes.map((c) => c.id).toSorted()).toEqual([3, 4, 5, 6, 7, 8, 9]);
    expect(report.summary.agentsAffectedOnUnchangedTrees).toBe(0);
    expect((await run(['replay', recording, '--trees', changedTrees, '--fail-on-change', 'untouched'])).code).toBe(0);
    expect((await run(['replay', recording, '--trees', changedTrees, '--fail-on-change', 'any'])).code).toBe(1);
  });

  test('not a recording: a clear message, exit 2', async () => {
    const junk = join(dir, 'junk.canopyrec');
    await writeFile(junk, 'hello');
    const r = await run(['replay', junk]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not a Canopy recording/);
  });
});

describe('canopy serve', () => {
  test('starts the service with the same flags as npm start, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--host', '127.0.0.1', '--trees', TREES, '--workers', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const port = await new Promise<number>((resolvePort, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /"port":(\d+).*canopy listening/.exec(out);
        if (m !== null) resolvePort(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('canopy convert', () => {
  test('the bundled guard tree exports to Groot2 XML and imports back to the same definition', async () => {
    const xmlFile = join(dir, 'guard.xml');
    const out = await run(['convert', join(TREES, 'guard.json'), '--to', 'xml', '-o', xmlFile]);
    expect(out.code).toBe(0);
    const xml = await readFile(xmlFile, 'utf8');
    expect(xml).toMatch(/<root BTCPP_format="4"/);
    expect(xml).toMatch(/<TreeNodesModel>/);
    const back = await run(['convert', xmlFile, '--to', 'canopy']);
    expect(back.code).toBe(0);
    const original = JSON.parse(await readFile(join(TREES, 'guard.json'), 'utf8')) as { root: { type: string } };
    const imported = JSON.parse(back.stdout) as { root: { type: string } };
    expect(imported.root.type).toBe(original.root.type);
    expect(await run(['validate', TREES])).toMatchObject({ code: 0 });
  });

  test('an XML file with an unknown node: file:line:column and exit 1; a missing --to: usage error', async () => {
    const bad = join(dir, 'bad.xml');
    await writeFile(bad, '<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n    <Sequence>\n      <Frobnicate/>\n    </Sequence>\n  </BehaviorTree>\n</root>\n');
    const r = await run(['convert', bad, '--to', 'canopy']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/bad\.xml:4:7: /);
    expect((await run(['convert', bad])).code).not.toBe(0);
  });
});
