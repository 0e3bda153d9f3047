// Summarises a V8 .cpuprofile (node --cpu-prof): the functions with the most self time and inclusive
// time, located in the TypeScript sources through the emitted source maps.
//
//   node dist/bench/lib/cpuprofile.js <file.cpuprofile> [top=25] [under=<function name>]
//
// `under` keeps only samples with that function on the stack (e.g. `play`: the benchmark's ticking,
// without start-up, spawning and the full GCs of the memory measurement).

import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface FunctionTime {
  /** `name (file:line)`, the file relative to the working directory, TypeScript when a source map says so. */
  readonly where: string;
  readonly selfMs: number;
  readonly totalMs: number;
}

const sourceMaps = new Map<string, SourceMap | null>();

function sourceMapFor(file: string): SourceMap | null {
  let map = sourceMaps.get(file);
  if (map === undefined) {
    map = existsSync(`${file}.map`) ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))) : null;
    sourceMaps.set(file, map);
  }
  return map;
}

function locate(frame: ProfileNode['callFrame']): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url.startsWith('file://')) return frame.url === '' ? name : `${name} (${frame.url}:${frame.lineNumber + 1})`;
  const file = fileURLToPath(frame.url);
  const entry = sourceMapFor(file)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry !== undefined && entry !== null && 'originalSource' in entry && typeof entry.originalSource === 'string') {
    // tsc writes sources relative to the map's folder.
    const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : resolve(dirname(file), entry.originalSource);
    return `${name} (${relative(process.cwd(), source)}:${entry.originalLine + 1})`;
  }
  return `${name} (${relative(process.cwd(), file)}:${frame.lineNumber + 1})`;
}

/** Self and inclusive time per function (merged over call sites), most self time first. */
export function summarize(profile: CpuProfile, under?: string): { readonly totalMs: number; readonly functions: FunctionTime[] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let totalUs = 0;
  const inside = (id: number): boolean => {
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) if (byId.get(n)!.callFrame.functionName === under) return true;
    return false;
  };
  profile.samples.forEach((id, k) => {
    const dt = profile.timeDeltas[k] ?? 0;
    if (under !== undefined && !inside(id)) return;
    self.set(id, (self.get(id) ?? 0) + dt);
    totalUs += dt;
  });
  const selfByWhere = new Map<string, number>();
  const totalByWhere = new Map<string, number>();
  const whereOf = new Map<number, string>();
  const where = (id: number): string => {
    let w = whereOf.get(id);
    if (w === undefined) whereOf.set(id, (w = locate(byId.get(id)!.callFrame)));
    return w;
  };
  for (const [id, us] of self) {
    selfByWhere.set(where(id), (selfByWhere.get(where(id)) ?? 0) + us);
    // Inclusive time: once per distinct function on the stack (recursion counted once).
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const w = where(n);
      if (seen.has(w)) continue;
      seen.add(w);
      totalByWhere.set(w, (totalByWhere.get(w) ?? 0) + us);
    }
  }
  const functions = [...totalByWhere.keys()]
    .map((w) => ({ where: w, selfMs: (selfByWhere.get(w) ?? 0) / 1000, totalMs: totalByWhere.get(w)! / 1000 }))
    .toSorted((a, b) => b.selfMs - a.selfMs);
  return { totalMs: totalUs / 1000, functions };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, topText, under] = process.argv.slice(2);
  if (file === undefined) {
    console.error('usage: node dist/bench/lib/cpuprofile.js <file.cpuprofile> [top]');
    process.exit(2);
  }
  const top = Number(topText ?? 25);
  const { totalMs, functions } = summarize(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, under);
  const pct = (ms: number): string => `${((100 * ms) / totalMs).toFixed(1).padStart(5)}%`;
  console.log(`${file}: ${totalMs.toFixed(0)} ms sampled${under === undefined ? '' : ` under ${under}()`}\n\n  self            total           function`);
  for (const f of functions.slice(0, top)) {
    console.log(`${f.selfMs.toFixed(0).padStart(6)} ms ${pct(f.selfMs)} ${f.totalMs.toFixed(0).padStart(6)} ms ${pct(f.totalMs)}  ${f.where}`);
  }
}
