// Reading the service's /metrics (Prometheus text format): samples by series, the difference of two
// scrapes, and quantiles of a histogram's buckets the way Prometheus' histogram_quantile computes them.

/** One scrape: every sample, keyed by its series as written (`name{label="v",...}`). */
export interface Scrape {
  /** `performance.now()` when the scrape was answered. */
  readonly at: number;
  readonly samples: ReadonlyMap<string, number>;
}

/** One parsed series key. */
interface Series {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** Parses the Prometheus text format (comments and blank lines skipped; timestamps ignored). */
export function parseMetrics(text: string, at = 0): Scrape {
  const samples = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    // The value follows the series (whose label values may hold spaces), then an optional timestamp.
    const close = line.lastIndexOf('}');
    const rest = close >= 0 ? line.slice(close + 1).trim() : line.slice(line.indexOf(' ') + 1).trim();
    const key = close >= 0 ? line.slice(0, close + 1) : line.slice(0, line.indexOf(' '));
    const value = parseValue(rest.split(/\s+/)[0] ?? '');
    if (key !== '' && !Number.isNaN(value)) samples.set(key, value);
  }
  return { at, samples };
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** Splits `name{a="1",b="2"}` into its name and labels. */
export function parseSeries(key: string): Series {
  const open = key.indexOf('{');
  if (open < 0) return { name: key, labels: {} };
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const m of key.slice(open + 1, -1).matchAll(re)) {
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return { name: key.slice(0, open), labels };
}

function matches(labels: Readonly<Record<string, string>>, filter: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(filter)) if (labels[k] !== v) return false;
  return true;
}

/** The sum of every sample of metric `name` whose labels include `filter`; 0 when there is none. */
export function sum(scrape: Scrape, name: string, filter: Readonly<Record<string, string>> = {}): number {
  let total = 0;
  for (const [key, value] of scrape.samples) {
    if (!key.startsWith(name)) continue;
    const s = parseSeries(key);
    if (s.name === name && matches(s.labels, filter)) total += value;
  }
  return total;
}

/** Samples of metric `name` by the value of `label` (e.g. errors by code). */
export function byLabel(scrape: Scrape, name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of scrape.samples) {
    if (!key.startsWith(name)) continue;
    const s = parseSeries(key);
    const v = s.labels[label];
    if (s.name === name && v !== undefined) out[v] = (out[v] ?? 0) + value;
  }
  return out;
}

/** `after − before` for every series of `after` (a series missing before counts from 0). For counters and histograms. */
export function delta(before: Scrape, after: Scrape): Scrape {
  const samples = new Map<string, number>();
  for (const [key, value] of after.samples) samples.set(key, value - (before.samples.get(key) ?? 0));
  return { at: after.at, samples };
}

/** Cumulative bucket counts of histogram `name` (summed over series matching `filter`), by upper bound, ascending. */
export function buckets(scrape: Scrape, name: string, filter: Readonly<Record<string, string>> = {}): Array<{ le: number; count: number }> {
  const byLe = new Map<number, number>();
  const bucketName = `${name}_bucket`;
  for (const [key, value] of scrape.samples) {
    if (!key.startsWith(bucketName)) continue;
    const s = parseSeries(key);
    if (s.name !== bucketName || s.labels.le === undefined || !matches(s.labels, filter)) continue;
    const le = parseValue(s.labels.le);
    byLe.set(le, (byLe.get(le) ?? 0) + value);
  }
  return [...byLe.entries()].map(([le, count]) => ({ le, count })).toSorted((a, b) => a.le - b.le);
}

/**
 * The q-quantile (0–1) of a histogram from its cumulative buckets, as Prometheus' histogram_quantile:
 * linear interpolation inside the bucket holding the rank (from 0 for the first bucket). A rank in
 * the +Inf bucket gives the highest finite bound. NaN when the histogram is empty.
 */
export function quantile(q: number, cumulative: ReadonlyArray<{ le: number; count: number }>): number {
  if (cumulative.length === 0) return Number.NaN;
  const total = cumulative[cumulative.length - 1]!.count;
  if (!(total > 0)) return Number.NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of cumulative) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe;
      const inBucket = b.count - prevCount;
      if (inBucket <= 0) return b.le;
      return prevLe + ((b.le - prevLe) * (rank - prevCount)) / inBucket;
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}

/**
 * The upper bound of the highest bucket holding any value: the histogram's maximum is at most this
 * (Infinity when values fell beyond the last finite bound). 0 when empty.
 */
export function maxBound(cumulative: ReadonlyArray<{ le: number; count: number }>): number {
  let prevCount = 0;
  let bound = 0;
  for (const b of cumulative) {
    if (b.count > prevCount) bound = b.le;
    prevCount = b.count;
  }
  return bound;
}

/** The fraction (0–1) of a histogram's values at most `le` (a bucket bound). NaN when empty. */
export function fractionAtMost(le: number, cumulative: ReadonlyArray<{ le: number; count: number }>): number {
  const total = cumulative[cumulative.length - 1]?.count ?? 0;
  if (!(total > 0)) return Number.NaN;
  let below = 0;
  for (const b of cumulative) if (b.le <= le) below = b.count;
  return below / total;
}

/** Fetches and parses `url` (a /metrics endpoint). */
export async function fetchMetrics(url: string, headers: Record<string, string> = {}, timeoutMs = 5000): Promise<Scrape> {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const text = await response.text();
  return parseMetrics(text, performance.now());
}
