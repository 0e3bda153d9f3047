// The load generator's own garbage collection (`--generator-gc`): on its main thread (V8's --single-threaded-gc), or
// with V8's helper threads.
//
// By default V8 gives a process four helper threads that mark and scavenge in parallel with it. The generator shares
// this 2-core machine with the service it measures, and its collections came in bursts every 0.3–1.4 s: its four
// helpers at once, about 10 ms each, took the cores from the service's main thread and workers, whose ticks then
// waited on the run queue. In a burst run's steady window (8 game servers, 20,000 agents) that was the p99's second
// value: 10–35 ms instead of 6–9, in about half of the runs since round nineteen (docs/capacity.md, *Round
// twenty-four*). On its main thread the generator's collections delay only its own sends, which the report counts
// apart (the generator's lateness). But where the generator itself is the bottleneck (100,000 agents in fixed mode),
// collecting on its main thread puts it further behind: that is why steady runs keep the helpers by default.
//
// V8 takes the flag only at start (set later with v8.setFlagsFromString, it aborts the process at the next
// collection), and NODE_OPTIONS does not allow it: the generator starts itself again with it.

import { spawn } from 'node:child_process';
import { constants } from 'node:os';

const SINGLE_THREADED_GC = '--single-threaded-gc';

/** How this process collects its garbage: on its main thread only (`single`), or with V8's helper threads. */
export function generatorGc(): 'single' | 'parallel' {
  return process.execArgv.includes(SINGLE_THREADED_GC) ? 'single' : 'parallel';
}

/**
 * With `want` single and this process not already so: runs this process's script again under --single-threaded-gc
 * with the same arguments, passes signals on to it, and exits with its code (never resolves then). Resolves at once
 * otherwise, and if the child cannot be started (the generator then runs as it is).
 */
export async function withGeneratorGc(want: 'single' | 'parallel'): Promise<void> {
  if (want === 'parallel' || generatorGc() === 'single') return;
  // argv[1] is the script, as Node resolved it; the rest are its arguments.
  const child = spawn(process.execPath, [...process.execArgv, SINGLE_THREADED_GC, ...process.argv.slice(1)], { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const s of signals) process.on(s, forward);
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('exit', (exit, signal) => resolve(exit ?? 128 + (signal === null ? 0 : constants.signals[signal])));
  });
  if (code !== null) process.exit(code);
  for (const s of signals) process.off(s, forward);
  process.stderr.write(`loadtest: could not start itself with ${SINGLE_THREADED_GC}; its collections use V8's helper threads\n`);
}
