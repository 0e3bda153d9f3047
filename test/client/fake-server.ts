// A tiny protocol server for the SDK tests: a raw `ws` WebSocketServer on a loopback port that
// speaks protocol v1 through the protocol module. Each test scripts the parts it needs.

import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import {
  decode,
  encode,
  encodeDecisions,
  encodeDespawned,
  encodeEntryError,
  encodeError,
  encodeGoodbye,
  encodePong,
  encodeSpawned,
  encodeWelcome,
  parseClientFrame,
  type AgentId,
  type ClientMessage,
  type EntryError,
  type HelloMessage,
} from '../../src/protocol/index.js';

/** One connection as the fake server sees it. */
export interface FakeConnection {
  readonly socket: WebSocket;
  /** The TCP socket under it (to stall or cut the link below the WebSocket). */
  readonly tcp: Socket;
  readonly hello: HelloMessage;
  readonly session: string;
  readonly received: ClientMessage[];
  /** Sends raw bytes (or a value, encoded) to this client. */
  send(frame: Uint8Array | Record<string, unknown>): void;
}

/** How the fake server answers a message; return true when handled (skips the default answer). */
export type Handler = (msg: ClientMessage, conn: FakeConnection) => boolean | void;

export class FakeServer {
  readonly connections: FakeConnection[] = [];
  readonly hellos: HelloMessage[] = [];
  /** Answers `hello` instead of the default when set (return true when handled); `tcp` is the raw socket. */
  onHello: ((hello: HelloMessage, socket: WebSocket, tcp: Socket) => boolean | void) | undefined;
  /** Answers any message after hello instead of the default when set. */
  onMessage: Handler | undefined;
  /** When set, upgrades need `Authorization: Bearer <apiKey>`. */
  apiKey: string | undefined;
  /** `welcome.tick` of resumed sessions (the last tick the session ran), when set. */
  resumeTick: number | undefined;
  /** Refuse the next N upgrades with this status. */
  refuseUpgrades = 0;
  refuseStatus = 503;
  private sessionCount = 0;
  private readonly sessions = new Map<string, string>(); // resume token → session id
  private readonly waiters: Array<() => void> = [];

  private constructor(private readonly wss: WebSocketServer) {
    wss.on('connection', (socket, request) => this.accept(socket, request.socket));
  }

  static async start(): Promise<FakeServer> {
    let server: FakeServer | undefined;
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      verifyClient: (info: { req: IncomingMessage }, done: (ok: boolean, status?: number) => void) => {
        const self = server!;
        if (self.refuseUpgrades > 0) {
          self.refuseUpgrades--;
          done(false, self.refuseStatus);
          self.notify();
          return;
        }
        if (self.apiKey !== undefined && info.req.headers.authorization !== `Bearer ${self.apiKey}`) {
          done(false, 401);
          return;
        }
        done(true);
      },
    });
    server = new FakeServer(wss);
    await new Promise<void>((resolve) => wss.once('listening', resolve));
    return server;
  }

  get url(): string {
    const address = this.wss.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected address');
    return `ws://127.0.0.1:${address.port}/v1/ws`;
  }

  /** The latest connection. */
  get last(): FakeConnection {
    const conn = this.connections.at(-1);
    if (conn === undefined) throw new Error('no connection yet');
    return conn;
  }

  /** Resolves once `predicate` holds, re-checked on every server event (no sleeping). */
  async until(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('condition not reached in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Drops every connection abruptly (no close frame), like a network failure. */
  dropAll(): void {
    for (const conn of this.connections) conn.socket.terminate();
  }

  async stop(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private accept(socket: WebSocket, tcp: Socket): void {
    let conn: FakeConnection | undefined;
    socket.on('message', (data: Buffer) => {
      const parsed = parseClientFrame(data, 1 << 24, conn === undefined ? undefined : { fieldCount: conn.hello.fields?.length ?? 0, mode: conn.hello.mode });
      if (!parsed.ok) {
        socket.send(encodeError(parsed.code, parsed.message, parsed.re));
      } else if (conn === undefined) {
        if (parsed.msg.t !== 'hello') {
          socket.send(encodeError('E_PROTOCOL', 'the first message must be hello'));
          socket.close();
        } else {
          conn = this.welcome(parsed.msg, socket, tcp);
        }
      } else {
        conn.received.push(parsed.msg);
        if (this.onMessage?.(parsed.msg, conn) !== true) {
          // Refused entries of bb/result/snapshot come first, as `error` frames marked `entry`.
          if (parsed.msg.t !== 'spawn' && parsed.msg.t !== 'despawn') {
            for (const e of parsed.errors) socket.send(encodeEntryError(e, parsed.msg.id));
          }
          this.answer(parsed.msg, conn);
        }
      }
      this.notify();
    });
    socket.on('close', () => this.notify());
  }

  private welcome(hello: HelloMessage, socket: WebSocket, tcp: Socket): FakeConnection | undefined {
    this.hellos.push(hello);
    if (this.onHello?.(hello, socket, tcp) === true) return undefined;
    let session = hello.resume === undefined ? undefined : this.sessions.get(hello.resume);
    if (session === undefined) session = `s${++this.sessionCount}`;
    const resume = `${session}-token-${this.hellos.length}`;
    this.sessions.set(resume, session);
    const conn: FakeConnection = {
      socket,
      tcp,
      hello,
      session,
      received: [],
      send: (frame) => socket.send(frame instanceof Uint8Array ? frame : encode(frame)),
    };
    this.connections.push(conn);
    socket.send(
      encodeWelcome(
        {
          session,
          resume,
          mode: hello.mode ?? 'fixed',
          hz: hello.mode === 'lockstep' ? 0 : (hello.hz ?? 20),
          trees: ['guard', 'orc'],
          limits: { maxAgents: 1000, maxFrameBytes: 1 << 24 },
          ...(hello.resume !== undefined && this.resumeTick !== undefined ? { tick: this.resumeTick } : {}),
        },
        hello.id,
      ),
    );
    return conn;
  }

  /** The default behaviour of a healthy service. */
  private answer(msg: ClientMessage, conn: FakeConnection): void {
    switch (msg.t) {
      case 'spawn': {
        const ids: AgentId[] = [];
        const errors: EntryError[] = [];
        for (const agent of msg.agents) {
          if (agent.tree === 'guard' || agent.tree === 'orc') ids.push(agent.id);
          else errors.push({ id: agent.id, code: 'E_UNKNOWN_TREE', message: `unknown tree "${agent.tree}"` });
        }
        conn.send(encodeSpawned(ids, errors, msg.id));
        return;
      }
      case 'despawn':
        conn.send(encodeDespawned(msg.ids, [], msg.id));
        return;
      case 'ping':
        conn.send(encodePong(msg.n, msg.id));
        return;
      case 'snapshot':
        if (conn.hello.mode === 'lockstep') {
          conn.send(encodeDecisions({ tick: msg.tick, basedOn: msg.tick, actions: [[1, msg.tick, 'step', { tick: msg.tick }]] }));
        }
        return;
      case 'bye':
        conn.socket.close(1000, 'bye');
        return;
      default:
        return;
    }
  }
}

/** Sends goodbye then closes, as a service shutting down does. */
export function goodbye(conn: FakeConnection, retryAfterMs: number): void {
  conn.send(encodeGoodbye('shutting down', retryAfterMs));
  conn.socket.close(1001, 'going away');
}

/** Decodes a frame the way a non-TypeScript client would see it (for assertions). */
export function look(frame: Uint8Array): unknown {
  return decode(frame);
}
