// Starts the Canopy service as its own process (as in production: the game server and Canopy do not
// share an event loop), on loopback and a free port, and waits until it is ready.

import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A running Canopy process. */
export interface CanopyProcess {
  readonly port: number;
  readonly wsUrl: string;
  readonly http: string;
  readonly child: ChildProcess;
  /** SIGTERM (Canopy drains), resolved when the process has exited. */
  close(): Promise<void>;
}

const repo = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `src/service/main.ts` (through tsx) with CANOPY_* settings from `env` over loopback defaults. */
export async function startCanopyProcess(env: Record<string, string> = {}): Promise<CanopyProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', `${repo}src/service/main.ts`], {
    cwd: repo,
    env: { ...process.env, CANOPY_HOST: '127.0.0.1', CANOPY_PORT: '0', CANOPY_TREES: `${repo}trees`, ...env, CANOPY_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // If this process ends without closing it (an uncaught error), Canopy must not outlive it.
  const orphaned = (): void => void child.kill('SIGTERM');
  process.once('exit', orphaned);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`canopy exited (${String(code)}) before listening`)));
    // Canopy logs JSON lines: take the port from 'canopy listening', then pass on warnings and errors only.
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: { msg?: string; port?: number; level?: number } = {};
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        process.stdout.write(`${line}\n`);
        return;
      }
      if (entry.msg === 'canopy listening' && typeof entry.port === 'number') resolve(entry.port);
      else if ((entry.level ?? 0) >= 40) process.stderr.write(`[canopy] ${line}\n`);
    });
  });
  const http = `http://127.0.0.1:${port}`;
  // Listening comes before the workers are up: /readyz turns 200 when sessions can start.
  for (let i = 0; i < 200 && !(await fetch(`${http}/readyz`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 50));
  return {
    port,
    wsUrl: `ws://127.0.0.1:${port}/v1/ws`,
    http,
    child,
    close: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      process.off('exit', orphaned);
    },
  };
}
