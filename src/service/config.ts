// The service's configuration: every setting is an environment variable (`CANOPY_PORT`) and a flag
// of the start command (`--port`); flags win. docs/configuration.md describes each one.

import { availableParallelism } from 'node:os';
import { LIMITS } from '../protocol/index.js';
import { zstdAvailable, type CodecChoice } from '../record/codec.js';

/** The service's settings, parsed and checked. */
export interface Config {
  /** Interface to listen on. */
  readonly host: string;
  /** TCP port; 0 picks a free one. */
  readonly port: number;
  /** Folder holding the tree files. */
  readonly trees: string;
  /** Folder holding plugin modules, or null for none. */
  readonly plugins: string | null;
  /** Worker threads ticking agents; 0 ticks them on the main thread. */
  readonly workers: number;
  /** Default ticks per second of fixed-mode sessions. */
  readonly hz: number;
  /** Accepted API keys; empty means no authentication. */
  readonly apiKeys: readonly string[];
  /** pino log level. */
  readonly logLevel: LogLevel;
  /** How long a dropped session (or an idle HTTP session) is kept, in milliseconds. */
  readonly resumeGraceMs: number;
  /** Most agents in one session. */
  readonly maxAgents: number;
  /** Largest inbound frame (and HTTP body), in bytes. */
  readonly maxFrameBytes: number;
  /** Longest shutdown, from the signal to the process exit, in milliseconds. */
  readonly shutdownMs: number;
  /** Most WebSocket messages per second on one connection (bursts up to one second's worth); 0: unlimited. */
  readonly maxMessageRate: number;
  /** Unsent plus held outbound bytes of all WebSocket connections together; 0: no service-wide cap. */
  readonly maxOutboxBytes: number;
  /** A WebSocket connection that has not said hello after this many milliseconds is closed; 0: never. */
  readonly helloTimeoutMs: number;
  /** Most open WebSocket connections; further upgrades are answered 503 (health routes never are). */
  readonly maxConnections: number;
  /** Most HTTP sessions open at once. */
  readonly maxHttpSessions: number;
  /** Most HTTP sessions created per second (bursts up to one second's worth); 0: unlimited. */
  readonly httpSessionRate: number;
  /** Longest an HTTP request may take to arrive, and longest an idle HTTP connection is kept, in ms. */
  readonly requestTimeoutMs: number;
  /** Which sessions are recorded without asking: `none` (only `hello.record` / the HTTP route) or `all`. */
  readonly record: 'none' | 'all';
  /** Folder recordings are written to. */
  readonly recordDir: string;
  /** A recording part that reaches this many bytes is closed and the next part begins; 0: no rotation. */
  readonly recordMaxBytes: number;
  /** Above this many bytes of recordings in the folder, the oldest finished parts are deleted; 0: no cap. */
  readonly recordMaxTotalBytes: number;
  /** Block codec of new recordings: `auto` (zstd where this Node has it, Brotli otherwise), `zstd` or `brotli`. */
  readonly recordCodec: CodecChoice;
  /** Largest body of POST /v1/trees/validate, in bytes. */
  readonly maxValidateBytes: number;
  /** Reload the trees when a file of the folder changes (default: true unless NODE_ENV=production). */
  readonly watch: boolean;
  /** What a reload does to agents already running on a changed tree (a spawn's `reload` field wins). */
  readonly reload: 'restart' | 'keep';
  /** The inspector's control (breakpoints, fault injection): development only, off by default. */
  readonly inspectorControl: boolean;
  /** API keys that may use the inspector's control (also listed in apiKeys); when apiKeys are set, control needs one of these. */
  readonly inspectorControlKeys: readonly string[];
  /** Durable sessions across instances: the Redis URL (`redis://[user:password@]host:port[/db]`), or null for none. */
  readonly redisUrl: string | null;
  /** Owner lease of a durable session, ms: a dead owner's sessions are adopted this long after its last renewal. */
  readonly redisLeaseMs: number;
  /** Session time between two durable checkpoints of a session, ms. */
  readonly redisCheckpointMs: number;
  /** Longest a lockstep answer waits for its inputs to reach Redis, ms; 0: it does not wait (no write-ahead). */
  readonly redisWaitMs: number;
  /** MiB of the main thread's native (malloc) heap the start command faults in at start-up (heap.ts); 0: none. */
  readonly nativeHeapReserveMb: number;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A setting that cannot be used; `message` is the one line printed before exiting with code 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** The defaults, as documented. `workers` depends on the machine. */
export function defaultConfig(): Config {
  return {
    host: '0.0.0.0',
    port: 8080,
    trees: './trees',
    plugins: null,
    workers: availableParallelism(),
    hz: 20,
    apiKeys: [],
    logLevel: 'info',
    resumeGraceMs: 30_000,
    maxAgents: 100_000,
    maxFrameBytes: LIMITS.defaultMaxFrameBytes,
    shutdownMs: 10_000,
    maxMessageRate: 10_000,
    maxOutboxBytes: 256 * 1024 * 1024,
    helloTimeoutMs: 10_000,
    maxConnections: 900,
    maxHttpSessions: 1000,
    httpSessionRate: 100,
    requestTimeoutMs: 30_000,
    record: 'none',
    recordDir: './recordings',
    recordMaxBytes: 256 * 1024 * 1024,
    recordMaxTotalBytes: 10 * 1024 * 1024 * 1024,
    recordCodec: 'auto',
    maxValidateBytes: 1024 * 1024,
    watch: true,
    reload: 'restart',
    inspectorControl: false,
    inspectorControlKeys: [],
    redisUrl: null,
    redisLeaseMs: 5000,
    redisCheckpointMs: 2000,
    redisWaitMs: 250,
    nativeHeapReserveMb: 96,
  };
}

type Setter = (raw: string, name: string) => Partial<Config>;

const MAX_FRAME_BYTES = 1024 * 1024 * 1024;

/** Every setting: its key in Config (the flag and variable names derive from it) and its parser. */
const SETTINGS: Readonly<Record<string, Setter>> = {
  host: (raw, name) => ({ host: nonEmpty(raw, name) }),
  port: (raw, name) => ({ port: integer(raw, name, 0, 65_535) }),
  trees: (raw, name) => ({ trees: nonEmpty(raw, name) }),
  plugins: (raw) => ({ plugins: raw.trim() === '' ? null : raw.trim() }),
  workers: (raw, name) => ({ workers: integer(raw, name, 0, 256) }),
  hz: (raw, name) => ({ hz: rate(raw, name) }),
  apiKeys: (raw) => ({ apiKeys: raw.split(',').map((k) => k.trim()).filter((k) => k.length > 0) }),
  logLevel: (raw, name) => ({ logLevel: level(raw, name) }),
  resumeGraceMs: (raw, name) => ({ resumeGraceMs: integer(raw, name, 0, 86_400_000) }),
  maxAgents: (raw, name) => ({ maxAgents: integer(raw, name, 1, 10_000_000) }),
  maxFrameBytes: (raw, name) => ({ maxFrameBytes: integer(raw, name, 1024, MAX_FRAME_BYTES) }),
  shutdownMs: (raw, name) => ({ shutdownMs: integer(raw, name, 0, 600_000) }),
  maxMessageRate: (raw, name) => ({ maxMessageRate: integer(raw, name, 0, 10_000_000) }),
  maxOutboxBytes: (raw, name) => ({ maxOutboxBytes: integer(raw, name, 0, Number.MAX_SAFE_INTEGER) }),
  helloTimeoutMs: (raw, name) => ({ helloTimeoutMs: integer(raw, name, 0, 3_600_000) }),
  maxConnections: (raw, name) => ({ maxConnections: integer(raw, name, 1, 10_000_000) }),
  maxHttpSessions: (raw, name) => ({ maxHttpSessions: integer(raw, name, 1, 10_000_000) }),
  httpSessionRate: (raw, name) => ({ httpSessionRate: integer(raw, name, 0, 10_000_000) }),
  requestTimeoutMs: (raw, name) => ({ requestTimeoutMs: integer(raw, name, 100, 3_600_000) }),
  record: (raw, name) => ({ record: recordMode(raw, name) }),
  recordDir: (raw, name) => ({ recordDir: nonEmpty(raw, name) }),
  recordMaxBytes: (raw, name) => ({ recordMaxBytes: integer(raw, name, 0, Number.MAX_SAFE_INTEGER) }),
  recordMaxTotalBytes: (raw, name) => ({ recordMaxTotalBytes: integer(raw, name, 0, Number.MAX_SAFE_INTEGER) }),
  recordCodec: (raw, name) => ({ recordCodec: recordCodec(raw, name) }),
  maxValidateBytes: (raw, name) => ({ maxValidateBytes: integer(raw, name, 1024, MAX_FRAME_BYTES) }),
  watch: (raw, name) => ({ watch: boolean(raw, name) }),
  reload: (raw, name) => ({ reload: reloadPolicy(raw, name) }),
  inspectorControl: (raw, name) => ({ inspectorControl: boolean(raw, name) }),
  inspectorControlKeys: (raw) => ({ inspectorControlKeys: raw.split(',').map((k) => k.trim()).filter((k) => k.length > 0) }),
  redisUrl: (raw, name) => ({ redisUrl: redisUrl(raw, name) }),
  redisLeaseMs: (raw, name) => ({ redisLeaseMs: integer(raw, name, 300, 600_000) }),
  redisCheckpointMs: (raw, name) => ({ redisCheckpointMs: integer(raw, name, 50, 600_000) }),
  redisWaitMs: (raw, name) => ({ redisWaitMs: integer(raw, name, 0, 60_000) }),
  nativeHeapReserveMb: (raw, name) => ({ nativeHeapReserveMb: integer(raw, name, 0, 4096) }),
};

/** `resumeGraceMs` → `CANOPY_RESUME_GRACE_MS`. */
export function envName(key: string): string {
  return `CANOPY_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

/** `resumeGraceMs` → `--resume-grace-ms`. */
export function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** Every setting's flag, variable and default, for `--help` and the docs test. */
export function describeSettings(): Array<{ key: string; flag: string; env: string }> {
  return Object.keys(SETTINGS).map((key) => ({ key, flag: flagName(key), env: envName(key) }));
}

/**
 * Reads the configuration: defaults, then `CANOPY_*` variables of `env`, then the flags in `argv`
 * (`--port 9000` or `--port=9000`). Unknown `CANOPY_*` variables are ignored (they may belong to
 * a newer version); unknown flags are not.
 * @throws {ConfigError} naming the first setting that is invalid and why.
 */
export function parseConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Config {
  // Designers edit trees on a development service; a production one (the Docker image) changes only on purpose.
  let config: Config = { ...defaultConfig(), watch: env.NODE_ENV !== 'production' };
  for (const [key, set] of Object.entries(SETTINGS)) {
    const name = envName(key);
    const raw = env[name];
    if (raw !== undefined) config = { ...config, ...set(raw, name) };
  }
  const byFlag = new Map(Object.entries(SETTINGS).map(([key, set]) => [flagName(key), set]));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const set = byFlag.get(flag);
    if (set === undefined) throw new ConfigError(`${flag}: unknown option (see --help)`);
    let raw: string;
    if (eq > 0) raw = arg.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new ConfigError(`${flag}: expected a value`);
      raw = next;
      i++;
    }
    config = { ...config, ...set(raw, flag) };
  }
  return config;
}

/** The settings as one line of JSON for the start-up log, API keys masked. */
export function redactConfig(config: Config): Record<string, unknown> {
  return {
    ...config,
    apiKeys: config.apiKeys.map(() => '***'),
    inspectorControlKeys: config.inspectorControlKeys.map(() => '***'),
    redisUrl: config.redisUrl === null ? null : config.redisUrl.replace(/\/\/([^@/]*)@/, '//***@'),
  };
}

function redisUrl(raw: string, name: string): string | null {
  const text = raw.trim();
  if (text === '') return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${name}: expected a URL such as redis://host:6379, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new ConfigError(`${name}: expected a redis:// or rediss:// URL, got ${JSON.stringify(url.protocol)}`);
  return text;
}

function integer(raw: string, name: string, min: number, max: number): number {
  const text = raw.trim();
  const value = Number(text);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}: expected an integer ${min}–${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function rate(raw: string, name: string): number {
  const text = raw.trim();
  const value = Number(text);
  if (text === '' || !Number.isFinite(value) || value <= 0 || value > LIMITS.maxHz) {
    throw new ConfigError(`${name}: expected ticks per second, a number above 0 and at most ${LIMITS.maxHz}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function nonEmpty(raw: string, name: string): string {
  const text = raw.trim();
  if (text === '') throw new ConfigError(`${name}: expected a non-empty value`);
  return text;
}

function level(raw: string, name: string): LogLevel {
  const text = raw.trim().toLowerCase();
  const found = LOG_LEVELS.find((l) => l === text);
  if (found === undefined) throw new ConfigError(`${name}: expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(raw)}`);
  return found;
}

function recordMode(raw: string, name: string): 'none' | 'all' {
  const text = raw.trim().toLowerCase();
  if (text !== 'none' && text !== 'all') throw new ConfigError(`${name}: expected none or all, got ${JSON.stringify(raw)}`);
  return text;
}

function recordCodec(raw: string, name: string): CodecChoice {
  const text = raw.trim().toLowerCase();
  if (text !== 'auto' && text !== 'zstd' && text !== 'brotli') throw new ConfigError(`${name}: expected auto, zstd or brotli, got ${JSON.stringify(raw)}`);
  if (text === 'zstd' && !zstdAvailable) throw new ConfigError(`${name}: zstd needs Node 22.15 or later (this is Node ${process.versions.node}); use auto or brotli`);
  return text;
}

function boolean(raw: string, name: string): boolean {
  const text = raw.trim().toLowerCase();
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw new ConfigError(`${name}: expected true or false, got ${JSON.stringify(raw)}`);
}

function reloadPolicy(raw: string, name: string): 'restart' | 'keep' {
  const text = raw.trim().toLowerCase();
  if (text !== 'restart' && text !== 'keep') throw new ConfigError(`${name}: expected restart or keep, got ${JSON.stringify(raw)}`);
  return text;
}
