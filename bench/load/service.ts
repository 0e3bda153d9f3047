// The service under test: started by the generator as a child process on loopback (so its CPU and
// memory can be read from /proc and it can be restarted with another worker count), or an existing
// service given by URL (then CPU and memory come from its /metrics: process_* and, by thread, canopy_thread_*).

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { USER_HZ, readThreadStats } from '../../src/service/pool/thread-cpu.js';
import { fetchMetrics, parseSeries, sum, type Scrape } from './prom.js';

/** CPU time and memory of the service process, every thread included. */
export interface ProcessSample {
  /** `performance.now()` of the sample. */
  readonly at: number;
  /** User + system CPU seconds since the process started. */
  readonly cpuSeconds: number;
  /** Resident set, bytes. */
  readonly rssBytes: number;
  /**
   * CPU seconds by thread, when the service runs on this machine: the main thread (sockets, decoding,
   * routing), each worker thread (trees), and the rest (V8's GC and compiler helpers, libuv).
   */
  readonly threads?: ThreadCpu;
}

/** CPU seconds of a Node process's threads, from /proc/<pid>/task/<tid>/{comm,stat}. */
export interface ThreadCpu {
  readonly main: number;
  /** Worker threads, by thread id (read from /proc: named `WorkerThread` since Node 22; before, every thread is `node` and they count in `other`) or by worker index (read from /metrics). */
  readonly workers: ReadonlyMap<number, number>;
  readonly other: number;
  /**
   * Minor page faults so far (the kernel mapping memory touched for the first time, or again after it was given
   * back) of the main thread and of the worker threads together: on some VMs each costs ~10 µs, and a process that
   * grows faults in every new page.
   */
  readonly faults: { readonly main: number; readonly workers: number };
}

/** A service to load: where to connect, how to read its metrics, how to stop it. */
export interface Target {
  /** WebSocket endpoint, `ws://host:port/v1/ws`. */
  readonly wsUrl: string;
  /** `http://host:port`. */
  readonly httpUrl: string;
  /** The service's process id, when the generator started it. */
  readonly pid: number | undefined;
  /** Worker threads, as the service reports them on /readyz (undefined if it does not say). */
  readonly workers: number | undefined;
  /** CPU and RSS of the service now. */
  sample(): Promise<ProcessSample>;
  /** Stops the service if the generator started it; otherwise does nothing. */
  stop(): Promise<void>;
  /** What went wrong with a started service, if anything: its exit and its last log lines (for failure reports). */
  diagnose(): string | undefined;
}

/** The repository root (holding package.json), from the sources or from dist/. */
/**
 * The trees folder that has tree `tree`: the repository's trees/, else bench/trees/ (the engine benchmark's
 * larger trees, `large` and `shooter`), so `--tree` takes either.
 */
export function treesFolderFor(tree: string): string {
  const has = (dir: string): boolean => ['.json', '.yaml', '.yml'].some((ext) => existsSync(join(dir, `${tree}${ext}`)));
  const bench = join(repoRoot(), 'bench', 'trees');
  return !has(join(repoRoot(), 'trees')) && has(bench) ? bench : join(repoRoot(), 'trees');
}

export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('no package.json above bench/load');
    dir = up;
  }
  return dir;
}

export interface StartOptions {
  /** Node binary running the service (default: the generator's own). */
  readonly node?: string;
  /** Flags for that node (e.g. `--cpu-prof --cpu-prof-dir /tmp/prof`). */
  readonly nodeArgs?: readonly string[];
  readonly workers: number;
  /** Tree folder (default: the repository's trees/). */
  readonly trees?: string;
  /** Loopback address to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Extra CANOPY_* variables. */
  readonly env?: Readonly<Record<string, string>>;
  /** How long start-up may take (default 30 s). */
  readonly startTimeoutMs?: number;
  /** Lines of the service's output (JSON logs) other than start-up, for diagnosis. */
  readonly onLog?: (line: string) => void;
}

/** True for 127.0.0.0/8, ::1 and localhost: the only addresses the generator starts a service on. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const kind = isIP(host);
  if (kind === 4) return host.startsWith('127.');
  if (kind === 6) return host === '::1';
  return false;
}


/** CPU seconds and RSS of process `pid` from /proc (Linux), every thread included. */
export function readProc(pid: number): ProcessSample {
  const at = performance.now();
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after "pid (comm)": state is field 3, utime 14, stime 15 (1-based, proc(5)).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = /VmRSS:\s+(\d+) kB/.exec(status);
  const threads = readThreads(pid);
  return { at, cpuSeconds, rssBytes: rss === null ? 0 : Number(rss[1]) * 1024, ...(threads !== undefined ? { threads } : {}) };
}

/** CPU seconds of each thread of process `pid` (Linux), or undefined when /proc cannot say. */
export function readThreads(pid: number): ThreadCpu | undefined {
  const stats = readThreadStats(pid);
  if (stats === undefined) return undefined;
  let main = 0;
  let other = 0;
  const workers = new Map<number, number>();
  const faults = { main: 0, workers: 0 };
  for (const t of stats) {
    if (t.tid === pid) {
      main += t.cpuSeconds;
      faults.main += t.minorFaults;
    } else if (t.name === 'WorkerThread') {
      workers.set(t.tid, t.cpuSeconds);
      faults.workers += t.minorFaults;
    } else other += t.cpuSeconds;
  }
  return { main, workers, other, faults };
}

/**
 * The same figures from a service's /metrics (`canopy_thread_cpu_seconds_total` and
 * `canopy_thread_minor_page_faults_total`, Linux services since round thirty-four), workers keyed by their index;
 * undefined when it has no such series.
 */
export function threadsFromMetrics(s: Scrape): ThreadCpu | undefined {
  let main: number | undefined;
  let other = 0;
  const workers = new Map<number, number>();
  const faults = { main: 0, workers: 0 };
  for (const [key, value] of s.samples) {
    const { name, labels } = parseSeries(key);
    const thread = labels.thread;
    if (thread === undefined) continue;
    const cpu = name === 'canopy_thread_cpu_seconds_total';
    if (!cpu && name !== 'canopy_thread_minor_page_faults_total') continue;
    if (thread === 'main') {
      if (cpu) main = value;
      else faults.main = value;
    } else if (thread.startsWith('worker-')) {
      if (cpu) workers.set(Number(thread.slice(7)), value);
      else faults.workers += value;
    } else if (cpu) other += value;
  }
  return main === undefined ? undefined : { main, workers, other, faults };
}

/**
 * CPU seconds the whole machine spent busy (every core: /proc/stat's first line, all but idle and
 * iowait), or NaN off Linux. Busy minus the service and the generator is what other programs took.
 */
export function machineBusySeconds(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    const busy = f[0]! + f[1]! + f[2]! + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
    return busy / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/**
 * The node flags of the start commands (`npm start`, the Docker image): a floor under the main thread's heap limit
 * (src/service/heap.ts says why; the service clears it for its workers), and two V8 helper threads instead of Node's
 * four (docs/configuration.md says why).
 */
export const START_NODE_FLAGS: readonly string[] = ['--initial-old-space-size=128', '--min-semi-space-size=16', '--v8-pool-size=2'];

/**
 * The environment the start commands set unless the caller's sets it (`npm start`'s `${VAR:-default}`, the Docker
 * image's `ENV`): glibc keeps large blocks mapped and returns them when freed (docs/capacity.md, "A million agents").
 */
export const START_ENV: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: '131072' };

/** Path of the built start command. */
export function mainScript(): string {
  const main = join(repoRoot(), 'dist', 'src', 'service', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} not found: run npm run build first`);
  return main;
}

/**
 * Starts `node dist/src/service/main.js` on loopback, port 0, and resolves once it listens (its
 * `canopy listening` log line names the port it got) and /readyz answers 200.
 */
export async function startService(options: StartOptions): Promise<Target> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host)) throw new Error(`the generator starts services on loopback only, not ${host}`);
  const args = [
    ...START_NODE_FLAGS,
    ...(options.nodeArgs ?? []),
    mainScript(),
    '--host', host,
    '--port', '0',
    '--workers', String(options.workers),
    '--trees', options.trees ?? join(repoRoot(), 'trees'),
    '--log-level', 'info',
    '--max-agents', '1000000',
  ];
  const env: Record<string, string | undefined> = { ...START_ENV, ...process.env, ...options.env };
  // Settings come from our flags only; stray CANOPY_* variables of the caller's shell must not change the test.
  for (const key of Object.keys(env)) if (key.startsWith('CANOPY_') && options.env?.[key] === undefined) delete env[key];
  const child = spawn(options.node ?? process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  let exitedWith: string | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      exitedWith = `exited with ${code === null ? `signal ${signal}` : `code ${code}`}`;
      resolve(code);
    }),
  );
  let stopRequested = false;
  const recent: string[] = [];
  const remember = (line: string): void => {
    recent.push(line);
    if (recent.length > 40) recent.shift();
  };

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => fail(`no 'canopy listening' within ${options.startTimeoutMs ?? 30_000} ms`), options.startTimeoutMs ?? 30_000);
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`the service did not start: ${why}\n${recent.join('\n')}`));
    };
    lines(child, 'stdout', (line) => {
      remember(line);
      if (!settled && line.includes('canopy listening')) {
        try {
          const listening = (JSON.parse(line) as { port?: unknown }).port;
          if (typeof listening === 'number') {
            settled = true;
            clearTimeout(timer);
            resolve(listening);
            return;
          }
        } catch {
          // not JSON: keep reading
        }
      }
      if (settled) options.onLog?.(line);
    });
    lines(child, 'stderr', (line) => {
      remember(line);
      if (settled) options.onLog?.(line);
    });
    void exited.then((code) => fail(`it exited with code ${code}`));
  });
  const httpUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const ready = await readiness(httpUrl, {}, options.startTimeoutMs ?? 30_000);
  let stopping: Promise<void> | undefined;
  return {
    wsUrl: `${httpUrl.replace(/^http/, 'ws')}/v1/ws`,
    httpUrl,
    pid: child.pid,
    workers: ready.workers,
    sample: async () => readProc(child.pid!),
    diagnose() {
      const problems = recent.filter((l) => /"level":(40|50|60)|Error|error/.test(l)).slice(-10);
      if (exitedWith === undefined && problems.length === 0) return undefined;
      return [`the service ${exitedWith !== undefined && !stopRequested ? exitedWith : 'is running'}`, ...problems].join('\n');
    },
    stop() {
      stopRequested = true;
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(timer);
        }
        process.removeListener('exit', killOnExit);
      })();
      return stopping;
    },
  };
}

/** A service that is already running, at `url` (`ws://host:port[/v1/ws]` or `http://host:port`). */
export async function existingService(url: string, apiKey?: string): Promise<Target> {
  const u = new URL(url);
  const secure = u.protocol === 'wss:' || u.protocol === 'https:';
  if (!['ws:', 'wss:', 'http:', 'https:'].includes(u.protocol)) throw new Error(`--url: expected ws://, wss://, http:// or https://, got ${url}`);
  const httpUrl = `${secure ? 'https' : 'http'}://${u.host}`;
  const wsPath = u.pathname === '/' || u.pathname === '' ? '/v1/ws' : u.pathname;
  const headers: Record<string, string> = apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` };
  const ready = await readiness(httpUrl, headers, 10_000);
  return {
    wsUrl: `${secure ? 'wss' : 'ws'}://${u.host}${wsPath}${u.search}`,
    httpUrl,
    pid: undefined,
    workers: ready.workers,
    async sample() {
      const s = await fetchMetrics(`${httpUrl}/metrics`, headers);
      const threads = threadsFromMetrics(s);
      return { at: s.at, cpuSeconds: sum(s, 'process_cpu_seconds_total'), rssBytes: sum(s, 'process_resident_memory_bytes'), ...(threads !== undefined ? { threads } : {}) };
    },
    stop: async () => undefined,
    diagnose: () => undefined,
  };
}

/** Polls /readyz until it answers 200 (the service listens and its workers are up). */
async function readiness(httpUrl: string, headers: Record<string, string>, timeoutMs: number): Promise<{ workers: number | undefined }> {
  const deadline = performance.now() + timeoutMs;
  let last = '';
  while (performance.now() < deadline) {
    try {
      const r = await fetch(`${httpUrl}/readyz`, { headers, signal: AbortSignal.timeout(2000) });
      const body = (await r.json()) as { workers?: unknown };
      if (r.status === 200) return { workers: typeof body.workers === 'number' ? body.workers : undefined };
      last = `HTTP ${r.status}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${httpUrl}/readyz did not answer 200 within ${timeoutMs} ms (${last})`);
}

function lines(child: ChildProcess, stream: 'stdout' | 'stderr', onLine: (line: string) => void): void {
  let buffer = '';
  child[stream]!.setEncoding('utf8');
  child[stream]!.on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      onLine(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
  });
}
