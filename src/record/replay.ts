// Exact replay: a recording's inputs re-run on this thread with its own trees, tick by tick, checking that
// every decisions frame comes out byte for byte as recorded. ReplaySession is also the inspector's way in.

import type { Agent, AgentId } from '../bt/index.js';
import type { TreeLibrary } from '../bt/library.js';
import { decode, hasContent, type DecisionsFields } from '../protocol/index.js';
import { loadCatalog } from '../service/pool/load.js';
import { Kind, type RecordingHeader, type TickRecord } from './format.js';
import { RecordingReader, type RawRecord } from './reader.js';
import { ReplayRun, readTick, type ResultFilter, type TickOutcome } from './run.js';

/** How to open a recording for replay. */
export interface ReplayOptions {
  /** Run on these trees instead of the recorded ones (names not in it keep their recorded definition). */
  readonly trees?: TreeLibrary;
  /** A plugin folder (the recorded trees may use plugin nodes). Ignored when `trees` is given (its catalog is used). */
  readonly plugins?: string;
  /** What-if: which recorded results reach the agents. */
  readonly filter?: ResultFilter;
  /** Worker threads for the agents (exact replay on many cores); 0 (default): this thread, and `agent()` works. */
  readonly workers?: number;
  /**
   * With `workers`: while the workers tick one tick, this thread reads and applies the inputs recorded before
   * the next one and compares the tick before (wall time about the larger of the two instead of their sum).
   * The frames and the difference found are the same; but once `next()` returns, the inputs up to the next
   * tick are applied already and that tick may be running, so `agents()` lists agents a step ahead.
   * For runs that go straight through (verifyRecording), not for looking at agents between ticks.
   */
  readonly pipeline?: boolean;
}

/** The first frame that came out differently. */
export interface FrameDifference {
  readonly tick: number;
  /** The recorded frame, decoded (null: nothing was recorded for this tick). */
  readonly recorded: unknown;
  /** The replayed frame, decoded (null: the replay sent nothing). */
  readonly replayed: unknown;
}

/**
 * A recording opened for replay, positioned between ticks. The inspector's surface:
 * - `ReplaySession.open(path, { trees?, plugins? })`
 * - `header` (mode, hz, fields, trees...), `firstTick` / `lastTick` (from the index)
 * - `seek(tick)`: runs to the end of that tick (backwards: starts over from the first record)
 * - `next()`: runs the next tick; `tick`: the tick run last (null before the first)
 * - `agents()` → `{ id, tree, label }[]`, `agent(id)` → the engine's Agent at the current tick
 * - `decisions()` / `frame()`: what the current tick decided (fields, and the frame as the service sends it)
 * - `difference`: the first frame that did not match the recording (exact replay only)
 */
export class ReplaySession {
  readonly header: RecordingHeader;
  readonly firstTick: number | null;
  readonly lastTick: number | null;
  /** Set when the recording stopped early (a crash cut it off): why. */
  get problem(): string | null {
    return this.reader.problem;
  }
  /** The first frame that did not match the recording, once one was seen. */
  difference: FrameDifference | null = null;
  /** Decisions frames compared so far. */
  compared = 0;
  /** Differences at earlier ticks are not kept (`--from`). */
  compareFrom = -Infinity;
  /** Ticks after this one are not compared (`--to`: pipelined, the tick after it has run when the loop stops). */
  compareTo = Infinity;
  private readonly reader: RecordingReader;
  private readonly path: string;
  private readonly opts: ReplayOptions;
  private readonly catalogPromise: ReturnType<typeof loadCatalog> | null;
  private run: ReplayRun | undefined;
  private records: AsyncGenerator<RawRecord> | null = null;
  private current: TickOutcome | null = null;
  /** The replayed frame of the last tick, until the recorded one is read. */
  private unmatched: TickOutcome | null = null;
  private finished = false;
  /** Pipelined: the tick the workers are running now, started before the current one was compared. */
  private inflight: Promise<TickOutcome> | null = null;

  private constructor(path: string, reader: RecordingReader, opts: ReplayOptions) {
    this.path = path;
    this.reader = reader;
    this.header = reader.header;
    this.opts = opts;
    const index = reader.index().filter((b) => !Number.isNaN(b.firstTick));
    this.firstTick = index[0]?.firstTick ?? null;
    this.lastTick = index.at(-1)?.lastTick ?? null;
    this.catalogPromise = null;
  }

  /** Opens `path` (any part of a recording; replay starts at its first part). @throws {RecordingError} */
  static async open(path: string, opts: ReplayOptions = {}): Promise<ReplaySession> {
    const s = new ReplaySession(path, RecordingReader.open(path), opts);
    await s.restart();
    return s;
  }

  /** The tick run last, or null before the first. */
  get tick(): number | null {
    return this.current?.tick ?? null;
  }

  /** True once every record was read. */
  get done(): boolean {
    return this.finished;
  }

  /** What the current tick decided, or null before the first tick. */
  decisions(): DecisionsFields | null {
    return this.current?.decisions ?? null;
  }

  /** The current tick's decisions frame as the service encodes it. */
  frame(): Buffer | null {
    return this.current?.frame ?? null;
  }

  agents(): Array<{ id: AgentId; tree: string; label: string }> {
    return this.run!.agents();
  }

  /** The engine's Agent object at the current tick (inspect it; do not tick it). */
  agent(id: AgentId): Agent | null {
    return this.run!.agent(id);
  }

  /** Releases worker threads (with `workers`); the session cannot run further. */
  async close(): Promise<void> {
    await this.settleInflight();
    await this.records?.return(undefined);
    await this.run?.close();
    this.run = undefined;
  }

  /** Runs the next tick; false at the end of the recording. */
  async next(): Promise<boolean> {
    if (this.pipelined) return this.nextPipelined();
    for (;;) {
      const r = await this.records!.next();
      if (r.done === true) {
        this.finished = true;
        this.settle(null);
        return false;
      }
      const { kind, payload } = r.value;
      if (kind === Kind.TICK) {
        this.settle(null);
        this.current = await this.run!.tick(readTick(payload));
        this.unmatched = this.current;
        return true;
      }
      if (kind === Kind.DECISIONS) this.settle(payload);
      else if (kind === Kind.END || kind === Kind.HEADER) continue;
      else this.run!.apply(kind, payload);
    }
  }

  /** Runs to the end of `tick` (the last tick at or before it). Going backwards starts over. */
  async seek(tick: number): Promise<void> {
    if (this.pipelined) throw new Error('seek: a pipelined replay session only goes straight through (open it without `pipeline`)');
    if (this.current !== null && tick < this.current.tick) await this.restart();
    while (!this.finished && (this.current === null || this.current.tick < tick)) {
      if (!(await this.peekTickAtMost(tick))) return;
      await this.next();
    }
  }

  /** True when this session pipelines (ReplayOptions.pipeline, on worker threads). */
  private get pipelined(): boolean {
    return this.opts.pipeline === true && this.run !== undefined && this.run.onWorkers;
  }

  /**
   * next() pipelined. Records stay applied in their recorded order, each before the tick it preceded: the
   * router buffers inputs for the next tick while one is running (as it does for a fixed-mode session in the
   * service), and orders it posts (spawn, despawn) reach a worker behind the tick already posted to it. What
   * moves is only when this thread does its share: the inputs before tick N+1 are read and applied while
   * the workers tick N, and N is compared while they tick N+1.
   */
  private async nextPipelined(): Promise<boolean> {
    if (this.finished) return false;
    // Nothing running yet (the first tick, or after a restart): read up to the first tick and start it.
    if (this.inflight === null) {
      const first = await this.readToTick();
      if (first === null) {
        this.finished = true;
        return false;
      }
      this.start(first.tick);
    }
    // While it runs: the records after it up to the next tick (inputs applied, its DECISIONS held).
    const ahead = await this.readToTick();
    const outcome = await this.inflight!;
    this.inflight = null;
    // The next tick goes to the workers at once; this thread compares meanwhile.
    if (ahead !== null) this.start(ahead.tick);
    this.current = outcome;
    this.unmatched = outcome;
    if (ahead === null) this.finished = true;
    this.settle(ahead === null ? (this.finishedDecisions ?? null) : ahead.decisions);
    this.finishedDecisions = null;
    return true;
  }

  /** The DECISIONS record read after the last tick, when the recording ended right after it. */
  private finishedDecisions: Buffer | null = null;

  private start(t: TickRecord): void {
    const p = this.run!.tick(t);
    // Awaited by the next step; until then a failure must not count as unhandled (a read may throw first).
    p.catch(() => undefined);
    this.inflight = p;
  }

  /** Waits for a tick still running (pipelined), ignoring its failure: for close() and restart(). */
  private async settleInflight(): Promise<void> {
    const p = this.inflight;
    this.inflight = null;
    if (p !== null) await p.catch(() => undefined);
  }

  /**
   * Reads records up to the next TICK, applying inputs. Returns that tick and the DECISIONS record read on
   * the way (the frame of the tick before), or null at the end (that frame then in `finishedDecisions`).
   */
  private async readToTick(): Promise<{ tick: TickRecord; decisions: Buffer | null } | null> {
    let decisions: Buffer | null = null;
    for (;;) {
      const r = await this.records!.next();
      if (r.done === true) {
        this.finishedDecisions = decisions;
        return null;
      }
      const { kind, payload } = r.value;
      if (kind === Kind.TICK) return { tick: readTick(payload), decisions };
      // The first one is the tick's (as in next(): a second finds no tick left to compare).
      if (kind === Kind.DECISIONS) decisions ??= payload;
      else if (kind === Kind.END || kind === Kind.HEADER) continue;
      else this.run!.apply(kind, payload);
    }
  }

  private pending: RawRecord[] = [];

  /** True if the next TICK record is at or before `tick`. Looks ahead without applying anything. */
  private async peekTickAtMost(tick: number): Promise<boolean> {
    const ahead: RawRecord[] = [];
    try {
      for (;;) {
        const r = await this.records!.next();
        if (r.done === true) return ahead.length > 0;
        ahead.push(r.value);
        if (r.value.kind === Kind.TICK) return readTick(r.value.payload).tick <= tick;
      }
    } finally {
      this.pending.push(...ahead);
    }
  }

  private async restart(): Promise<void> {
    const catalog = this.opts.trees?.catalog ?? (await this.catalog());
    await this.settleInflight();
    this.finishedDecisions = null;
    await this.run?.close();
    if ((this.opts.workers ?? 0) > 0 && this.opts.trees === undefined && this.opts.filter === undefined) {
      this.run = await ReplayRun.create(this.header, catalog, { workers: this.opts.workers!, ...(this.opts.plugins !== undefined ? { plugins: this.opts.plugins } : {}) });
    } else {
      this.run = new ReplayRun(this.header, catalog, {
        ...(this.opts.trees !== undefined ? { override: this.opts.trees } : {}),
        ...(this.opts.filter !== undefined ? { filter: this.opts.filter } : {}),
      });
    }
    this.pending = [];
    await this.records?.return(undefined);
    this.records = this.withPending(RecordingReader.open(this.path));
    this.current = null;
    this.unmatched = null;
    this.finished = false;
  }

  /**
   * The reader's records, after any looked-ahead records held back in `pending`. Blocks are decompressed on
   * libuv's thread pool one ahead of the records being applied.
   */
  private async *withPending(reader: RecordingReader): AsyncGenerator<RawRecord> {
    const inner = reader.recordsAhead();
    for (;;) {
      const held = this.pending.shift();
      if (held !== undefined) {
        yield held;
        continue;
      }
      const r = await inner.next();
      if (r.done === true) {
        this.reader.problem = reader.problem;
        return;
      }
      yield r.value;
    }
  }

  private async catalog() {
    const loaded = await (this.catalogPromise ?? loadCatalog(this.opts.plugins));
    if (!loaded.ok) throw new Error(loaded.error);
    return loaded.catalog;
  }

  /** Compares the last replayed frame with the recorded one (`recorded` null: none was recorded). */
  private settle(recorded: Buffer | null): void {
    const mine = this.unmatched;
    this.unmatched = null;
    if (mine === null) return;
    // Fixed mode sends no frame for a tick with nothing to say; at the end a cut-off file may lack the last one.
    const expectFrame = this.header.mode === 'lockstep' || hasContent(mine.decisions);
    if (recorded === null && (!expectFrame || this.finished)) return;
    if (mine.tick < this.compareFrom || mine.tick > this.compareTo) return;
    this.compared++;
    if (this.difference !== null) return;
    if (recorded !== null && expectFrame && mine.matches(recorded)) return;
    this.difference = { tick: mine.tick, recorded: recorded === null ? null : decode(recorded), replayed: expectFrame ? decode(mine.frame) : null };
  }
}

/** What an exact replay found. */
export interface VerifyReport {
  readonly ticks: number;
  readonly frames: number;
  readonly firstTick: number | null;
  readonly lastTick: number | null;
  readonly identical: boolean;
  readonly difference: FrameDifference | null;
  /** The recording stopped early (cut off by a crash): where. */
  readonly truncated: string | null;
  /** Agents the session had before recording started (their decisions cannot be replayed), from the header. */
  readonly agentsAtStart: number;
}

/**
 * Replays `path` with its recorded trees and compares every decisions frame with the recorded one.
 * `from`/`to`: compare only ticks in that range (ticks before `from` still run: they build the state).
 */
export async function verifyRecording(
  path: string,
  opts: { plugins?: string; from?: number; to?: number; workers?: number; pipeline?: boolean; onTick?: (tick: number) => void } = {},
): Promise<VerifyReport> {
  // On worker threads pipelined: this thread reads and compares while the workers tick (same frames, same verdict).
  const s = await ReplaySession.open(path, {
    ...(opts.plugins !== undefined ? { plugins: opts.plugins } : {}),
    ...(opts.workers !== undefined ? { workers: opts.workers, pipeline: opts.pipeline ?? true } : {}),
  });
  if (opts.from !== undefined) s.compareFrom = opts.from;
  if (opts.to !== undefined) s.compareTo = opts.to;
  let ticks = 0;
  let first: number | null = null;
  let last: number | null = null;
  while (s.difference === null && (await s.next())) {
    const t = s.tick!;
    if (opts.to !== undefined && t > opts.to) break;
    opts.onTick?.(t);
    if (opts.from !== undefined && t < opts.from) continue;
    ticks++;
    first ??= t;
    last = t;
  }
  await s.close();
  let difference = s.difference as FrameDifference | null;
  if (difference !== null && opts.to !== undefined && difference.tick > opts.to) difference = null;
  return {
    ticks,
    frames: s.compared,
    firstTick: first,
    lastTick: last,
    identical: difference === null,
    difference,
    truncated: s.problem,
    agentsAtStart: s.header.agentsAtStart ?? 0,
  };
}
