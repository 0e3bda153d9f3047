// `npm start` is the command a supervisor runs: SIGTERM sent to the npm process itself must reach
// the server, which drains (goodbye to its clients), exits, and leaves no orphan behind holding the port.

import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { RawClient } from './service/harness.js';

const root = resolve(import.meta.dirname, '..');

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

describe('npm start', () => {
  test('SIGTERM to the npm process drains the server and exits it (no orphan under PID 1)', async () => {
    // `npm start`, exactly as a supervisor runs it (prestart builds first), on a free port.
    const npm = spawn('npm', ['start', '--', '--host', '127.0.0.1', '--port', '0', '--workers', '1'], {
      cwd: root,
      env: { ...process.env, CANOPY_LOG_LEVEL: 'info', CANOPY_SHUTDOWN_MS: '5000', CANOPY_TREES: resolve(root, 'trees') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => npm.once('exit', (code, signal) => done({ code, signal })));
    const listening = new Promise<{ port: number; pid: number }>((done, fail) => {
      npm.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /"pid":(\d+)[^\n]*"port":(\d+)[^\n]*"msg":"canopy listening"/.exec(out);
        if (m) done({ pid: Number(m[1]), port: Number(m[2]) });
      });
      npm.stderr.on('data', (d: Buffer) => (err += d.toString()));
      void exit.then(({ code }) => fail(new Error(`npm start exited ${code} before listening:\n${out}\n${err}`)));
    });
    let server: { port: number; pid: number } | undefined;
    try {
      server = await listening;
      expect(server.pid).not.toBe(npm.pid);
      const { client } = await RawClient.hello(`ws://127.0.0.1:${server.port}/v1/ws`, { mode: 'lockstep' });
      await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned');

      npm.kill('SIGTERM'); // the npm process only, as a supervisor without a process group does

      expect(await client.next('goodbye', undefined, 10_000)).toEqual({ t: 'goodbye', reason: 'shutdown', retryAfterMs: 1000 });
      expect((await client.closed).code).toBe(1001);
      expect(await exit).toEqual({ code: 0, signal: null });
      expect(out).toContain('"signal":"SIGTERM"');
      expect(out).toContain('"msg":"canopy stopped"');
      // The server process is gone (npm waited for it) and nothing listens on its port any more.
      expect(alive(server.pid)).toBe(false);
      expect(await accepts(server.port)).toBe(false);
    } finally {
      if (server !== undefined && alive(server.pid)) process.kill(server.pid, 'SIGKILL');
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
    }
  }, 120_000);
});
