// Start-up and shutdown: draining in process (goodbye with retryAfterMs, ticks in flight finish,
// readyz 503, new sessions refused), and the start command as a real process: SIGTERM drains and
// exits 0; bad settings exit 2 with one line; an invalid tree exits 1 listing every error.

import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createServer, StartupError } from '../../src/service/server.js';
import { defaultConfig } from '../../src/service/config.js';
import { RawClient, http, start, writeFixture, TREES } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;

beforeAll(async () => {
  fixture = await writeFixture(TREES);
});

afterAll(async () => {
  await fixture.remove();
});

describe('drain in process', () => {
  test('close(): every client gets goodbye {shutdown, retryAfterMs} as its last frame, then everything stops', async () => {
    const running = await start({ trees: fixture.trees, hz: 50, tuning: { retryAfterMs: 1500 } });
    const fixed = await RawClient.hello(running.wsUrl);
    const step = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    await http(running.base, 'POST', '/v1/sessions', {});
    await fixed.client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    await step.client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    await fixed.client.next('decisions');
    expect(await step.client.step({ tick: 9, time: 0 })).toMatchObject({ actions: [[1, 1, 'say', { word: 'hi', x: null }]] });
    const closing = running.close();
    for (const c of [fixed.client, step.client]) {
      expect(await c.next('goodbye')).toEqual({ t: 'goodbye', reason: 'shutdown', retryAfterMs: 1500 });
      expect((await c.closed).code).toBe(1001);
      expect(c.frames.at(-1)!.t).toBe('goodbye');
    }
    await closing;
    expect(running.server.pool.agentCount()).toBe(0);
    await expect(fetch(`${running.base}/healthz`)).rejects.toThrow("fetch failed");
  });

  test('while draining, readyz answers 503 and new sessions are refused (503 at the upgrade, on POST /v1/sessions)', async () => {
    const running = await start({ trees: fixture.trees });
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    // A client that stops reading holds the drain open until its socket is destroyed (2 s).
    client.socket.pause();
    const closing = running.close();
    expect(await http(running.base, 'GET', '/readyz')).toMatchObject({ status: 503, body: { status: 'draining' } });
    expect((await http(running.base, 'GET', '/healthz')).status).toBe(200);
    await expect(RawClient.open(running.wsUrl)).rejects.toMatchObject({ status: 503 });
    expect(await http(running.base, 'POST', '/v1/sessions', {})).toMatchObject({ status: 503, body: { code: 'E_UNAVAILABLE' } });
    client.socket.resume();
    await client.closed;
    await closing;
  });
  test('an HTTP client that never finishes its request does not hold the drain: it is cut after the close timeout', async () => {
    const running = await start({ trees: fixture.trees, tuning: { closeTimeoutMs: 200 } });
    const socket = connect(Number(new URL(running.base).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const cut = new Promise((resolve) => socket.once('close', resolve));
    socket.on('error', () => undefined); // being cut may reach this end as a reset (ECONNRESET): that is the point
    // Headers without their blank line: a request in progress, so not an idle connection fastify closes itself.
    socket.write('GET /healthz HTTP/1.1\r\nHost: canopy\r\n');
    await running.close(); // before the fix: held until the request timeout (30 s)
    await cut;
    await expect(fetch(`${running.base}/healthz`)).rejects.toThrow('fetch failed');
  });
});

describe('start-up failures', () => {
  test('an invalid tree stops start-up with every error (formatErrors)', async () => {
    const broken = await writeFixture({ a: { root: { type: 'sequnce', children: [] } }, b: '{ "root": ', c: TREES.talker });
    try {
      const config = { ...defaultConfig(), host: '127.0.0.1', port: 0, workers: 0, logLevel: 'silent' as const, trees: broken.trees };
      const err = await createServer(config).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StartupError);
      const lines = (err as Error).message.split('\n').toSorted();
      expect(lines).toHaveLength(2);
      // Each error with its line and column in the file (the root node starts at 1:9).
      expect(lines[0]).toMatch(/a\.json:1:9: root: unknown node type 'sequnce' \(did you mean 'sequence'\?\) \[E_NODE_UNKNOWN_TYPE\]$/);
      expect(lines[1]).toMatch(/b\.json:1:\d+: .* \[E_TREE_PARSE\]$/);
    } finally {
      await broken.remove();
    }
  });
});

const MAIN = fileURLToPath(new URL('../../src/service/main.ts', import.meta.url));

interface Proc {
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exit: Promise<number | null>;
  readonly kill: (signal: NodeJS.Signals) => void;
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
}

/** Runs the start command from its TypeScript source (node + tsx), as `npm start` runs the build. */
function run(args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    env: { ...process.env, CANOPY_HOST: '127.0.0.1', CANOPY_PORT: '0', CANOPY_WORKERS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    stdout: () => out,
    stderr: () => err,
    exit,
    kill: (signal) => child.kill(signal),
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = pattern.exec(out);
          if (m !== null) resolve(m);
        };
        listeners.push(check);
        check();
        void exit.then((code) => reject(new Error(`exited ${code} before ${pattern}: ${out}${err}`)));
      }),
  };
}

describe('the start command', () => {
  test('SIGTERM: goodbye with retryAfterMs to every client, clean exit 0', async () => {
    const proc = run([], { CANOPY_TREES: fixture.trees, CANOPY_SHUTDOWN_MS: '5000', CANOPY_LOG_LEVEL: 'info' });
    const [, port] = await proc.waitFor(/"port":(\d+)[^\n]*"msg":"canopy listening"/);
    const url = `ws://127.0.0.1:${port}/v1/ws`;
    const { client } = await RawClient.hello(url, { mode: 'lockstep' });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'walker' }] }, 'spawned');
    expect((await http(`http://127.0.0.1:${port}`, 'GET', '/readyz')).status).toBe(200);
    proc.kill('SIGTERM');
    expect(await client.next('goodbye')).toEqual({ t: 'goodbye', reason: 'shutdown', retryAfterMs: 1000 });
    expect((await client.closed).code).toBe(1001);
    expect(await proc.exit).toBe(0);
    expect(proc.stdout()).toContain('"msg":"canopy stopped"');
    // No per-tick logging at info level.
    expect(proc.stdout().split('\n').filter((l) => l.includes('"level":30')).length).toBeLessThan(10);
  });

  test('SIGTERM while starting (workers not ready yet): a clean exit 0, never killed by the signal', async () => {
    const proc = run([], { CANOPY_TREES: fixture.trees, CANOPY_SHUTDOWN_MS: '5000', CANOPY_LOG_LEVEL: 'info', CANOPY_WORKERS: '2' });
    await proc.waitFor(/"msg":"canopy starting"/);
    proc.kill('SIGTERM');
    expect(await proc.exit).toBe(0);
  });

  test('a bad setting: one line naming it, exit code 2', async () => {
    const proc = run(['--port', '80a'], { CANOPY_TREES: fixture.trees });
    expect(await proc.exit).toBe(2);
    expect(proc.stderr()).toBe('--port: expected an integer 0–65535, got "80a"\n');
    const env = run([], { CANOPY_TREES: fixture.trees, CANOPY_HZ: '-3' });
    expect(await env.exit).toBe(2);
    expect(env.stderr().trim().split('\n')).toEqual(['CANOPY_HZ: expected ticks per second, a number above 0 and at most 1000, got "-3"']);
  });

  test('an invalid tree: every error listed, exit code 1', async () => {
    const broken = await writeFixture({ a: { root: { type: 'wait' } }, b: { root: { type: 'action' } } });
    try {
      const proc = run([], { CANOPY_TREES: broken.trees, CANOPY_LOG_LEVEL: 'silent' });
      expect(await proc.exit).toBe(1);
      const text = proc.stderr();
      expect(text).toContain('canopy cannot start:');
      expect(text).toMatch(/a\.json:1:9: root\.seconds: .*\[E_PARAM_MISSING\]/);
      expect(text).toMatch(/b\.json:1:9: root\.action: .*\[E_PARAM_MISSING\]/);
    } finally {
      await broken.remove();
    }
  });
});
