// Real processes for the durable-session tests and the failover bench: a redis-server on a free port, and Canopy
// instances started from the sources (node + tsx, as `npm start` runs the build), each with its own port.

import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** A free TCP port on 127.0.0.1 (bound once to port 0, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** One child process whose output is read line by line. */
export interface Proc {
  readonly child: ChildProcess;
  readonly exit: Promise<number | null>;
  /** Resolves with the first match of `pattern` in the output so far or to come; rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  output(): string;
  kill(signal: NodeJS.Signals): void;
}

function watch(child: ChildProcess): Proc {
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: Buffer): void => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exit,
    output: () => out,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = pattern.exec(out);
          if (m !== null) {
            listeners.delete(check);
            resolve(m);
          }
        };
        listeners.add(check);
        check();
        void exit.then((code) => {
          if (listeners.delete(check)) reject(new Error(`process exited (${code}) before ${pattern}:\n${out.slice(-4000)}`));
        });
      }),
  };
}

/** A throwaway redis-server: no persistence, on a free port of 127.0.0.1. */
export async function startRedis(extra: readonly string[] = []): Promise<{ url: string; port: number; proc: Proc; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = watch(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] }));
  await proc.waitFor(/Ready to accept connections/);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    proc,
    stop: async () => {
      proc.kill('SIGKILL');
      await proc.exit;
    },
  };
}

const MAIN = fileURLToPath(new URL('../../src/service/main.ts', import.meta.url));

/** A Canopy instance as a real process (from the TypeScript sources). */
export interface Instance {
  readonly proc: Proc;
  readonly port: number;
  readonly wsUrl: string;
  readonly base: string;
}

/** Starts an instance with `env` (CANOPY_* settings) and waits until it listens. */
export async function startInstance(env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: { ...process.env, CANOPY_HOST: '127.0.0.1', CANOPY_PORT: String(port), CANOPY_LOG_LEVEL: 'info', CANOPY_WATCH: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = watch(child);
  await proc.waitFor(/"msg":"canopy listening"/);
  return { proc, port, wsUrl: `ws://127.0.0.1:${port}/v1/ws`, base: `http://127.0.0.1:${port}` };
}

/** The value of one metric line (`name` with its labels) from GET /metrics, or undefined. */
export async function metric(base: string, line: string): Promise<number | undefined> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}
