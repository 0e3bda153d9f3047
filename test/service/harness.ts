// Test harness for the service suites: temp tree folders, a real server on port 0, and a raw
// WebSocket client that speaks MessagePack frames directly (so the wire format is pinned).

import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { WebSocket, type RawData } from 'ws';
import { decode, encode } from '../../src/protocol/index.js';
import { defaultConfig } from '../../src/service/config.js';
import type { ServerConfig } from '../../src/service/context.js';
import { createServer, type CanopyServer } from '../../src/service/server.js';

/** Trees every suite can use. */
export const TREES: Record<string, unknown> = {
  // Each tick: one instant action, then the root succeeds (done).
  talker: { blackboard: { word: 'hi' }, root: { type: 'action', action: 'say', args: { word: 'bb.word', x: 'self.x' }, instant: true } },
  // A long action waiting on the game's result.
  walker: { blackboard: { speed: 1 }, root: { type: 'action', action: 'walk', args: { speed: 'bb.speed' } } },
  // Never decides anything.
  idle: { root: { type: 'running' } },
  // Rings once tree time reaches 1 s (wait starts at the first tick).
  alarm: { root: { type: 'sequence', children: [{ type: 'wait', seconds: 1 }, { type: 'action', action: 'ring', instant: true }] } },
};

/** A plugin whose condition throws when the agent's observation says `boom`. */
export const BOOM_PLUGIN = `export default {
  name: 'boom',
  conditions: {
    explode: {
      description: 'Throws when self.boom is true.',
      test(ctx) {
        if (ctx.self !== null && typeof ctx.self === 'object' && ctx.self.boom === true) throw new Error('kaboom');
        return true;
      },
    },
  },
};
`;

export const PLUGGED_TREE = { root: { type: 'sequence', children: [{ type: 'explode' }, { type: 'action', action: 'ok', instant: true }] } };

/** Writes trees (and optional plugins) into a fresh temp folder. */
export async function writeFixture(trees: Record<string, unknown> = TREES, plugins: Record<string, string> = {}): Promise<{ dir: string; trees: string; plugins: string | null; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'canopy-service-'));
  const treeDir = join(dir, 'trees');
  await mkdir(treeDir);
  for (const [name, def] of Object.entries(trees)) {
    await writeFile(join(treeDir, name.includes('.') ? name : `${name}.json`), typeof def === 'string' ? def : JSON.stringify(def));
  }
  let pluginDir: string | null = null;
  if (Object.keys(plugins).length > 0) {
    pluginDir = join(dir, 'plugins');
    await mkdir(pluginDir);
    for (const [file, text] of Object.entries(plugins)) await writeFile(join(pluginDir, file), text);
  }
  return { dir, trees: treeDir, plugins: pluginDir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface Running {
  readonly server: CanopyServer;
  readonly port: number;
  readonly wsUrl: string;
  readonly base: string;
  close(): Promise<void>;
}

/** A server on 127.0.0.1, port 0, inline workers and silent logs unless overridden. */
export async function start(overrides: Partial<ServerConfig>): Promise<Running> {
  // No folder watch unless a suite asks for it (CANOPY_WATCH defaults to true outside production).
  // No start-up warm-up (it only saves time for real game servers) unless a suite asks for it; nor V8's helper threads
  // lowered after large spawns (spawn-priority.ts: process-wide, and the suites share processes).
  const config: ServerConfig = { ...defaultConfig(), host: '127.0.0.1', port: 0, workers: 0, logLevel: 'silent', watch: false, ...overrides, tuning: { warmupAgents: 0, spawnHelperNice: 0, ...overrides.tuning } };
  // CANOPY_TEST_LOG=debug shows the server's logs through the test runner's console.
  const level = process.env.CANOPY_TEST_LOG ?? config.logLevel;
  const server = await createServer(config, { logger: pino({ level }, { write: (line: string) => console.error(line.trimEnd()) }) });
  const { port } = await server.listen();
  return {
    server,
    port,
    wsUrl: `ws://127.0.0.1:${port}/v1/ws`,
    base: `http://127.0.0.1:${port}`,
    close: () => server.close(),
  };
}

export type Frame = Record<string, unknown> & { t: string };

/**
 * A WebSocket client that sends raw MessagePack frames and keeps every frame it receives, so tests
 * await "the next frame of type X" without sleeping.
 */
export class RawClient {
  readonly socket: WebSocket;
  readonly frames: Frame[] = [];
  private cursor = 0;
  private waiters: Array<() => void> = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data: RawData) => {
      this.frames.push(decode(toBuffer(data)) as Frame);
      this.wake();
    });
    this.closed = new Promise((resolve) =>
      socket.once('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.wake();
      }),
    );
  }

  /** Opens a socket (rejects with the HTTP status on a refused upgrade). */
  static open(url: string, options: { headers?: Record<string, string>; autoPong?: boolean } = {}): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers: options.headers ?? {}, autoPong: options.autoPong ?? true });
      const client = new RawClient(socket);
      socket.once('open', () => resolve(client));
      socket.once('unexpected-response', (_req, res) => {
        reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode }));
        socket.terminate();
      });
      socket.once('error', reject);
    });
  }

  /** Opens a socket and completes the handshake; resolves with the welcome. */
  static async hello(url: string, hello: Record<string, unknown> = {}, options: { headers?: Record<string, string>; autoPong?: boolean } = {}): Promise<{ client: RawClient; welcome: Frame }> {
    const client = await RawClient.open(url, options);
    client.send({ t: 'hello', v: 1, ...hello });
    const welcome = await client.next('welcome');
    return { client, welcome };
  }

  send(msg: Record<string, unknown>): void {
    this.socket.send(encode(msg));
  }

  sendRaw(bytes: Uint8Array | string, binary = true): void {
    this.socket.send(bytes, { binary });
  }

  /** The next frame (optionally of type `t`, matching `where`) not yet consumed; earlier frames of other types are skipped. */
  async next(t?: string, where: (f: Frame) => boolean = () => true, timeoutMs = 5000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.cursor < this.frames.length) {
        const f = this.frames[this.cursor++]!;
        if ((t === undefined || f.t === t) && where(f)) return f;
      }
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error(`socket closed while waiting for ${t ?? 'a frame'}; got ${JSON.stringify(this.frames.map((f) => f.t))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${t ?? 'a frame'}; got ${JSON.stringify(this.frames.slice(-5))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Sends and awaits the reply carrying `re` = id. */
  async request(msg: Record<string, unknown>, t?: string): Promise<Frame> {
    const id = nextId++;
    this.send({ ...msg, id });
    return this.next(t, (f) => f.re === id);
  }

  /** Lockstep: sends a snapshot and awaits the decisions of that tick. */
  async step(snapshot: Record<string, unknown>): Promise<Frame> {
    this.send({ t: 'snapshot', ...snapshot });
    return this.next('decisions', (f) => f.tick === snapshot.tick);
  }

  terminate(): void {
    this.socket.terminate();
  }

  async close(): Promise<void> {
    if (this.socket.readyState !== WebSocket.CLOSED) this.socket.close();
    await this.closed;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

let nextId = 1;

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** fetch with a JSON body (or raw bytes with a content type). */
export async function http(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body instanceof Uint8Array) {
    init.body = body;
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const res = await fetch(base + path, init);
  const type = res.headers.get('content-type') ?? '';
  let parsed: unknown;
  if (type.includes('msgpack')) parsed = decode(new Uint8Array(await res.arrayBuffer()));
  else if (type.includes('json')) parsed = await res.json();
  else parsed = await res.text();
  return { status: res.status, body: parsed, headers: res.headers };
}
