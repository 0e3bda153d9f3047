// The `log` node in the service: lines collected by each host's sink travel back with the tick reply, and the
// router logs them on the main thread through the service logger (and hands them to an optional listener).
// A per-session per-tick cap keeps a `log` node on 50,000 agents from flooding the logger.

import type { AgentId, CompiledTree } from '../../bt/index.js';
import type { PoolLogEvent, PoolLogger } from './types.js';

/** At most this many `log` lines per session tick reach the logger; the rest are counted and reported in one line. */
export const LOG_LINES_PER_TICK = 100;

/** Levels a `log` node may use (trees.md), by the index that travels in a reply. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** One host's `log` lines of one tick: [slot, level index, message, node] and how many it dropped over the cap, by level index. */
export interface LogColumns {
  lines: Array<[number, number, string, number]>;
  dropped: [number, number, number, number];
}

/** Whether `logs` holds a line or a count of dropped ones. */
export function hasLogs(logs: LogColumns): boolean {
  const d = logs.dropped;
  return logs.lines.length > 0 || d[0] > 0 || d[1] > 0 || d[2] > 0 || d[3] > 0;
}

/** Whether the logger writes lines of this level index (a pino logger says; any other logger writes what it has a method for). */
export function levelEnabled(logger: PoolLogger | undefined, level: number): boolean {
  if (logger === undefined) return false;
  const name = LOG_LEVELS[level] ?? 'info';
  if (logger.isLevelEnabled !== undefined) return logger.isLevelEnabled(name);
  return name !== 'debug' || logger.debug !== undefined;
}

/** A level name as it travels (an unknown level logs at info). */
export function levelIndex(level: string): number {
  const i = (LOG_LEVELS as readonly string[]).indexOf(level);
  return i < 0 ? 1 : i;
}

/** What the router knows of the agent in a slot, to name it in a log line. */
export interface LogAgentLookup {
  (slot: number): { id: AgentId; label: string; tree: CompiledTree | null } | null;
}

/**
 * Turns the hosts' lines of one session tick into events, capped at LOG_LINES_PER_TICK over all hosts, in host
 * then slot order. Returns the events and how many lines were dropped (by the hosts' caps and this one). Lines
 * of a level `wanted` refuses are neither events nor counted as dropped: a `debug` line under an `info` logger
 * was never going to be written.
 */
export function collectLogs(
  session: string,
  tick: number,
  parts: ReadonlyArray<{ logs: LogColumns; agent: LogAgentLookup }>,
  wanted: (level: number) => boolean = () => true,
): { events: PoolLogEvent[]; dropped: number } {
  const events: PoolLogEvent[] = [];
  let dropped = 0;
  for (const { logs, agent } of parts) {
    for (let level = 0; level < logs.dropped.length; level++) if (wanted(level)) dropped += logs.dropped[level]!;
    for (const [slot, level, message, node] of logs.lines) {
      if (!wanted(level)) continue;
      if (events.length >= LOG_LINES_PER_TICK) {
        dropped++;
        continue;
      }
      const a = agent(slot);
      if (a === null) continue; // despawned and its slot reused: nobody to name
      const n = node >= 0 ? a.tree?.nodes[node] : undefined;
      events.push({ session, tick, agent: a.id, label: a.label, tree: a.tree?.name ?? null, node: node >= 0 ? node : null, path: n?.path ?? null, level: LOG_LEVELS[level] ?? 'info', message });
    }
  }
  return { events, dropped };
}

/** Logs the events through the service logger at their levels, then one warn line if lines were dropped. */
export function writeLogs(logger: PoolLogger | undefined, session: string, tick: number, events: readonly PoolLogEvent[], dropped: number): void {
  if (logger === undefined) return;
  for (const e of events) {
    const fields = { session: e.session, tick: e.tick, agent: e.agent, label: e.label, tree: e.tree, node: e.node, path: e.path };
    if (e.level === 'debug') logger.debug?.(fields, e.message);
    else logger[e.level](fields, e.message);
  }
  if (dropped > 0) {
    logger.warn({ session, tick, dropped, cap: LOG_LINES_PER_TICK }, `log nodes: ${dropped} lines of this tick dropped (at most ${LOG_LINES_PER_TICK} per session tick are logged)`);
  }
}

/** Logs one session tick's `log` node lines (capped) and hands each logged line to the listener, if any. */
export function emitLogs(
  logger: PoolLogger | undefined,
  listener: ((event: PoolLogEvent) => void) | null,
  session: string,
  tick: number,
  parts: ReadonlyArray<{ logs: LogColumns; agent: LogAgentLookup }>,
): void {
  // With a listener every level is collected (tools see debug lines); otherwise only what the logger writes.
  const wanted = listener !== null ? () => true : (level: number) => levelEnabled(logger, level);
  const { events, dropped } = collectLogs(session, tick, parts, wanted);
  writeLogs(logger, session, tick, events.filter((e) => levelEnabled(logger, levelIndex(e.level))), dropped);
  if (listener === null) return;
  for (const e of events) {
    try {
      listener(e);
    } catch (err) {
      logger?.error({ err, session }, 'agent pool: an onLog listener threw');
    }
  }
}
