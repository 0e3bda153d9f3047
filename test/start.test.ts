// `npm start` is the command a supervisor runs: SIGTERM sent to the npm process itself must reach
// the server, which drains (goodbye to its clients), exits, and leaves no orphan behind holding the port.
// It runs in a copy of the checkout, so its build (prestart) never rewrites the dist/ other tests use.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RawClient, writeFixture } from './service/harness.js';

/** A condition that keeps its worker busy for `self.busyMs` (and says so at once, on fd 1). */
const BUSY_PLUGIN = `import { writeSync } from 'node:fs';
export default {
  name: 'busy',
  conditions: {
    busy: {
      description: 'Busy-waits self.busyMs milliseconds.',
      test(ctx) {
        const ms = ctx.self !== null && typeof ctx.self === 'object' ? Number(ctx.self.busyMs) || 0 : 0;
        if (ms > 0) {
          writeSync(1, 'busy tick started\\n');
          const end = Date.now() + ms;
          while (Date.now() < end);
        }
        return true;
      },
    },
  },
};
`;

const root = resolve(import.meta.dirname, '..');
let checkout: string;

beforeAll(async () => {
  // The files git would check out (tracked, plus new ones not ignored), and the installed node_modules.
  checkout = await mkdtemp(join(tmpdir(), 'canopy-start-'));
  const { stdout } = await promisify(execFile)('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, maxBuffer: 16 << 20 });
  // node_modules is often a symlink (shared between work trees), which `node_modules/` in .gitignore
  // does not match; it is linked below instead.
  for (const file of stdout.split('\0').filter((f) => f !== '' && f !== 'node_modules' && !f.startsWith('node_modules/'))) {
    await cp(join(root, file), join(checkout, file), { recursive: true, force: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err; // deleted in the work tree but still in the index
    });
  }
  await symlink(join(root, 'node_modules'), join(checkout, 'node_modules'), 'dir');
});

afterAll(async () => {
  await rm(checkout, { recursive: true, force: true });
});

/** Whether a process with this pid still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Resolves true if something accepts a TCP connection on the port, false if it is refused. */
function accepts(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

interface NpmStart {
  readonly npm: ChildProcess;
  readonly out: () => string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The server's pid and port, from its `canopy listening` log line. */
  readonly listening: Promise<{ port: number; pid: number }>;
  /** Resolves once npm's output (the server's log) contains `text`. */
  waitFor(text: string): Promise<void>;
  /** Kills whatever is left (only after a failed assertion). */
  cleanup(): Promise<void>;
}

/** `npm start`, exactly as a supervisor runs it (prestart builds first), on a free port. */
function npmStart(env: Record<string, string> = {}): NpmStart {
  const npm = spawn('npm', ['start', '--', '--host', '127.0.0.1', '--port', '0', '--workers', '1'], {
    cwd: checkout,
    env: { ...process.env, CANOPY_LOG_LEVEL: 'info', CANOPY_SHUTDOWN_MS: '10000', CANOPY_TREES: join(checkout, 'trees'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const watchers: Array<() => void> = [];
  let out = '';
  let err = '';
  let server: { port: number; pid: number } | undefined;
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => npm.once('exit', (code, signal) => done({ code, signal })));
  const listening = new Promise<{ port: number; pid: number }>((done, fail) => {
    npm.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      for (const w of watchers.splice(0)) w();
      const m = /"pid":(\d+)[^\n]*"port":(\d+)[^\n]*"msg":"canopy listening"/.exec(out);
      if (m && server === undefined) done((server = { pid: Number(m[1]), port: Number(m[2]) }));
    });
    npm.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    void exit.then(({ code }) => fail(new Error(`npm start exited ${code} before listening:\n${out}\n${err}`)));
  });
  return {
    npm,
    out: () => out,
    exit,
    listening,
    waitFor(text) {
      return new Promise((done, fail) => {
        const check = (): void => {
          if (out.includes(text)) done();
          else watchers.push(check);
        };
        check();
        void exit.then(() => (out.includes(text) ? done() : fail(new Error(`npm start exited before printing ${text}:\n${out}\n${err}`))));
      });
    },
    async cleanup() {
      if (server !== undefined && alive(server.pid)) process.kill(server.pid, 'SIGKILL');
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
    },
  };
}

describe('npm start', () => {
  test('SIGTERM to the npm process drains the server and exits it (no orphan under PID 1)', async () => {
    const run = npmStart();
    try {
      const server = await run.listening;
      expect(server.pid).not.toBe(run.npm.pid);
      const { client } = await RawClient.hello(`ws://127.0.0.1:${server.port}/v1/ws`, { mode: 'lockstep' });
      await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned');

      run.npm.kill('SIGTERM'); // the npm process only, as a supervisor without a process group does

      expect(await client.next('goodbye', undefined, 10_000)).toEqual({ t: 'goodbye', reason: 'shutdown', retryAfterMs: 1000 });
      expect((await client.closed).code).toBe(1001);
      expect(await run.exit).toEqual({ code: 0, signal: null });
      expect(run.out()).toContain('"signal":"SIGTERM"');
      expect(run.out()).toContain('"msg":"canopy stopped"');
      // The server process is gone (npm waited for it) and nothing listens on its port any more.
      expect(alive(server.pid)).toBe(false);
      expect(await accepts(server.port)).toBe(false);
    } finally {
      await run.cleanup();
    }
  }, 120_000);

  test('Ctrl-C under npm start (SIGINT to the server, then again from npm) does not cut the drain short', async () => {
    // A tick that keeps the worker busy, so the drain (which waits for the tick in flight) lasts
    // long enough for the second SIGINT to land in the middle of it.
    const fixture = await writeFixture(
      { slow: { root: { type: 'sequence', children: [{ type: 'busy' }, { type: 'action', action: 'done', instant: true }] } } },
      { 'busy.mjs': BUSY_PLUGIN },
    );
    const run = npmStart({ CANOPY_TREES: fixture.trees, CANOPY_PLUGINS: fixture.plugins! });
    try {
      const server = await run.listening;
      const { client } = await RawClient.hello(`ws://127.0.0.1:${server.port}/v1/ws`, { mode: 'lockstep', fields: ['busyMs'] });
      await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'slow' }] }, 'spawned');
      client.send({ t: 'snapshot', tick: 1, time: 0, agents: [[1, 3000]] });
      await run.waitFor('busy tick started');

      // A terminal signals the whole foreground group: the server's own SIGINT, then npm's copy.
      process.kill(server.pid, 'SIGINT');
      await run.waitFor('"msg":"draining"');
      run.npm.kill('SIGINT');

      // The tick in flight still finishes and is answered, then the goodbye, then a clean exit.
      expect(await client.next('decisions', (f) => f.tick === 1, 15_000)).toMatchObject({ actions: [[1, 1, 'done', {}]] });
      expect(await client.next('goodbye', undefined, 10_000)).toEqual({ t: 'goodbye', reason: 'shutdown', retryAfterMs: 1000 });
      expect(await run.exit).toEqual({ code: 0, signal: null });
      expect(run.out()).toContain('"msg":"canopy stopped"');
      expect(alive(server.pid)).toBe(false);
    } finally {
      await run.cleanup();
      await fixture.remove();
    }
  }, 120_000);
});
