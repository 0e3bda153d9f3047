// The configuration parser: defaults, CANOPY_* variables, flags (which win), and the one-line
// messages that stop start-up with exit code 2.

import { describe, expect, test } from 'vitest';
import { readFileSync } from 'node:fs';
import { ConfigError, defaultConfig, describeSettings, envName, flagName, parseConfig, redactConfig } from '../../src/service/config.js';

/** The ConfigError message parseConfig throws for these arguments. */
function fails(argv: string[], env: Record<string, string> = {}): string {
  let caught: unknown;
  try {
    parseConfig(argv, env);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  return (caught as Error).message;
}

describe('parseConfig', () => {
  test('defaults', () => {
    const c = parseConfig([], {});
    expect(c).toEqual(defaultConfig());
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 8080,
      trees: './trees',
      plugins: null,
      hz: 20,
      apiKeys: [],
      logLevel: 'info',
      resumeGraceMs: 30_000,
      maxAgents: 100_000,
      maxFrameBytes: 16 * 1024 * 1024,
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
    });
    expect(c.workers).toBeGreaterThanOrEqual(1);
    // The Docker image runs with NODE_ENV=production: no folder watch unless asked for.
    expect(parseConfig([], { NODE_ENV: 'production' }).watch).toBe(false);
    expect(parseConfig([], { NODE_ENV: 'production', CANOPY_WATCH: 'true' }).watch).toBe(true);
  });

  test('environment variables', () => {
    const c = parseConfig([], {
      CANOPY_HOST: '127.0.0.1',
      CANOPY_PORT: '9000',
      CANOPY_TREES: '/srv/trees',
      CANOPY_PLUGINS: '/srv/plugins',
      CANOPY_WORKERS: '0',
      CANOPY_HZ: '30.5',
      CANOPY_API_KEYS: ' a , b,,c ',
      CANOPY_LOG_LEVEL: 'DEBUG',
      CANOPY_RESUME_GRACE_MS: '500',
      CANOPY_MAX_AGENTS: '10',
      CANOPY_MAX_FRAME_BYTES: '65536',
      CANOPY_SHUTDOWN_MS: '2000',
      CANOPY_MAX_MESSAGE_RATE: '0',
      CANOPY_MAX_OUTBOX_BYTES: '1048576',
      CANOPY_HELLO_TIMEOUT_MS: '0',
      CANOPY_MAX_CONNECTIONS: '50',
      CANOPY_MAX_HTTP_SESSIONS: '20',
      CANOPY_HTTP_SESSION_RATE: '0',
      CANOPY_REQUEST_TIMEOUT_MS: '5000',
      CANOPY_RECORD: 'ALL',
      CANOPY_RECORD_DIR: '/srv/recordings',
      CANOPY_RECORD_MAX_BYTES: '1000000',
      CANOPY_RECORD_MAX_TOTAL_BYTES: '0',
      CANOPY_RECORD_CODEC: 'Brotli',
      CANOPY_MAX_VALIDATE_BYTES: '4096',
      CANOPY_WATCH: 'false',
      CANOPY_RELOAD: 'keep',
      CANOPY_INSPECTOR_CONTROL: 'true',
      CANOPY_INSPECTOR_CONTROL_KEYS: 'b, c',
      CANOPY_REDIS_URL: 'redis://redis:6379/2',
      CANOPY_REDIS_LEASE_MS: '3000',
      CANOPY_REDIS_CHECKPOINT_MS: '1000',
      CANOPY_REDIS_WAIT_MS: '50',
      CANOPY_NATIVE_HEAP_RESERVE_MB: '0',
      CANOPY_SOMETHING_NEWER: 'ignored',
      PATH: '/bin',
    });
    expect(c).toEqual({
      host: '127.0.0.1',
      port: 9000,
      trees: '/srv/trees',
      plugins: '/srv/plugins',
      workers: 0,
      hz: 30.5,
      apiKeys: ['a', 'b', 'c'],
      logLevel: 'debug',
      resumeGraceMs: 500,
      maxAgents: 10,
      maxFrameBytes: 65536,
      shutdownMs: 2000,
      maxMessageRate: 0,
      maxOutboxBytes: 1_048_576,
      helloTimeoutMs: 0,
      maxConnections: 50,
      maxHttpSessions: 20,
      httpSessionRate: 0,
      requestTimeoutMs: 5000,
      record: 'all',
      recordDir: '/srv/recordings',
      recordMaxBytes: 1_000_000,
      recordMaxTotalBytes: 0,
      recordCodec: 'brotli',
      maxValidateBytes: 4096,
      watch: false,
      reload: 'keep',
      inspectorControl: true,
      inspectorControlKeys: ['b', 'c'],
      redisUrl: 'redis://redis:6379/2',
      redisLeaseMs: 3000,
      redisCheckpointMs: 1000,
      redisWaitMs: 50,
      nativeHeapReserveMb: 0,
    });
  });

  test('flags win over variables; both --flag value and --flag=value', () => {
    const c = parseConfig(['--port', '9001', '--api-keys=k1,k2', '--resume-grace-ms', '0'], { CANOPY_PORT: '9000', CANOPY_API_KEYS: 'env' });
    expect(c.port).toBe(9001);
    expect(c.apiKeys).toEqual(['k1', 'k2']);
    expect(c.resumeGraceMs).toBe(0);
  });

  test('an empty CANOPY_PLUGINS or CANOPY_API_KEYS means none', () => {
    expect(parseConfig([], { CANOPY_PLUGINS: '', CANOPY_API_KEYS: '' })).toMatchObject({ plugins: null, apiKeys: [] });
  });

  test('invalid values name the setting and why, in one line', () => {
    expect(fails([], { CANOPY_PORT: '80a' })).toBe('CANOPY_PORT: expected an integer 0–65535, got "80a"');
    expect(fails(['--port', '70000'])).toBe('--port: expected an integer 0–65535, got "70000"');
    expect(fails([], { CANOPY_WORKERS: '-1' })).toBe('CANOPY_WORKERS: expected an integer 0–256, got "-1"');
    expect(fails([], { CANOPY_HZ: '0' })).toBe('CANOPY_HZ: expected ticks per second, a number above 0 and at most 1000, got "0"');
    expect(fails([], { CANOPY_HZ: 'fast' })).toContain('CANOPY_HZ:');
    expect(fails([], { CANOPY_LOG_LEVEL: 'loud' })).toBe('CANOPY_LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"');
    expect(fails([], { CANOPY_MAX_AGENTS: '0' })).toBe('CANOPY_MAX_AGENTS: expected an integer 1–10000000, got "0"');
    expect(fails([], { CANOPY_MAX_FRAME_BYTES: '1.5' })).toContain('CANOPY_MAX_FRAME_BYTES: expected an integer');
    expect(fails([], { CANOPY_TREES: '  ' })).toBe('CANOPY_TREES: expected a non-empty value');
    expect(fails(['--prot', '1'])).toBe('--prot: unknown option (see --help)');
    expect(fails(['--port'])).toBe('--port: expected a value');
    expect(fails([], { CANOPY_RECORD_CODEC: 'lz4' })).toBe('CANOPY_RECORD_CODEC: expected auto, zstd or brotli, got "lz4"');
    for (const m of [fails([], { CANOPY_PORT: '80a' }), fails(['--nope'])]) expect(m).not.toContain('\n');
  });

  test('names: flags and variables derive from the same key', () => {
    expect(envName('resumeGraceMs')).toBe('CANOPY_RESUME_GRACE_MS');
    expect(flagName('resumeGraceMs')).toBe('--resume-grace-ms');
    expect(describeSettings().map((s) => s.env)).toEqual([
      'CANOPY_HOST',
      'CANOPY_PORT',
      'CANOPY_TREES',
      'CANOPY_PLUGINS',
      'CANOPY_WORKERS',
      'CANOPY_HZ',
      'CANOPY_API_KEYS',
      'CANOPY_LOG_LEVEL',
      'CANOPY_RESUME_GRACE_MS',
      'CANOPY_MAX_AGENTS',
      'CANOPY_MAX_FRAME_BYTES',
      'CANOPY_SHUTDOWN_MS',
      'CANOPY_MAX_MESSAGE_RATE',
      'CANOPY_MAX_OUTBOX_BYTES',
      'CANOPY_HELLO_TIMEOUT_MS',
      'CANOPY_MAX_CONNECTIONS',
      'CANOPY_MAX_HTTP_SESSIONS',
      'CANOPY_HTTP_SESSION_RATE',
      'CANOPY_REQUEST_TIMEOUT_MS',
      'CANOPY_RECORD',
      'CANOPY_RECORD_DIR',
      'CANOPY_RECORD_MAX_BYTES',
      'CANOPY_RECORD_MAX_TOTAL_BYTES',
      'CANOPY_RECORD_CODEC',
      'CANOPY_MAX_VALIDATE_BYTES',
      'CANOPY_WATCH',
      'CANOPY_RELOAD',
      'CANOPY_INSPECTOR_CONTROL',
      'CANOPY_INSPECTOR_CONTROL_KEYS',
      'CANOPY_REDIS_URL',
      'CANOPY_REDIS_LEASE_MS',
      'CANOPY_REDIS_CHECKPOINT_MS',
      'CANOPY_REDIS_WAIT_MS',
      'CANOPY_NATIVE_HEAP_RESERVE_MB',
    ]);
  });

  test('CANOPY_RECORD: none or all, nothing else', () => {
    expect(() => parseConfig([], { CANOPY_RECORD: 'some' })).toThrow('CANOPY_RECORD: expected none or all, got "some"');
  });

  test('every setting is documented in docs/configuration.md', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    for (const s of describeSettings()) {
      expect(doc).toContain(s.env);
      expect(doc).toContain(s.flag);
    }
  });

  test('API keys never reach the logs', () => {
    expect(redactConfig(parseConfig([], { CANOPY_API_KEYS: 'secret' })).apiKeys).toEqual(['***']);
    expect(redactConfig(parseConfig([], { CANOPY_INSPECTOR_CONTROL_KEYS: 'secret' })).inspectorControlKeys).toEqual(['***']);
    // A Redis URL's credentials neither.
    expect(redactConfig(parseConfig([], { CANOPY_REDIS_URL: 'redis://user:pw@redis:6379' })).redisUrl).toBe('redis://***@redis:6379');
    expect(() => parseConfig([], { CANOPY_REDIS_URL: 'http://redis' })).toThrow('CANOPY_REDIS_URL: expected a redis:// or rediss:// URL');
  });
});
