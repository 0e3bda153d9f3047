// The wire vocabulary: message type names and the error catalog, in one place (Colyseus keeps its
// codes in one `Protocol.ts` the same way). docs/protocol.md documents every code listed here.

/**
 * Every message type name of protocol v1, as sent in the `t` key of a frame.
 * Client → server: hello, spawn, despawn, bb, snapshot, result, lod, ping, bye.
 * Server → client: welcome, spawned, despawned, decisions, pong, error, goodbye, trees.
 */
export const MessageType = {
  hello: 'hello',
  welcome: 'welcome',
  spawn: 'spawn',
  spawned: 'spawned',
  despawn: 'despawn',
  despawned: 'despawned',
  bb: 'bb',
  snapshot: 'snapshot',
  result: 'result',
  lod: 'lod',
  decisions: 'decisions',
  ping: 'ping',
  pong: 'pong',
  error: 'error',
  goodbye: 'goodbye',
  bye: 'bye',
  trees: 'trees',
} as const;

/** A message type name. */
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** The message types a client may send; anything else from a client is `E_UNKNOWN_MESSAGE`. */
export const CLIENT_MESSAGE_TYPES: readonly MessageType[] = [
  'hello', 'spawn', 'despawn', 'bb', 'snapshot', 'result', 'lod', 'ping', 'bye',
];

/** The message types a server sends. */
export const SERVER_MESSAGE_TYPES: readonly MessageType[] = [
  'welcome', 'spawned', 'despawned', 'decisions', 'pong', 'error', 'goodbye', 'trees',
];

/**
 * The protocol's error codes, sent in `error.code`, `spawned.errors[].code` and `decisions.errors`.
 *
 * A code is part of the contract with game servers written in other languages: once published it
 * keeps its meaning forever. A retired code is never reused; it stays here, marked retired.
 */
export const ErrorCode = {
  E_PROTOCOL: 'E_PROTOCOL',
  E_VERSION: 'E_VERSION',
  E_UNKNOWN_MESSAGE: 'E_UNKNOWN_MESSAGE',
  E_BAD_FIELD: 'E_BAD_FIELD',
  E_UNKNOWN_TREE: 'E_UNKNOWN_TREE',
  E_DUPLICATE_AGENT: 'E_DUPLICATE_AGENT',
  E_UNKNOWN_AGENT: 'E_UNKNOWN_AGENT',
  E_UNKNOWN_KEY: 'E_UNKNOWN_KEY',
  E_LIMIT: 'E_LIMIT',
  E_PLUGIN: 'E_PLUGIN',
  E_INTERNAL: 'E_INTERNAL',
  E_RECORDING: 'E_RECORDING',
  E_RELOAD: 'E_RELOAD',
} as const;

/** A protocol error code. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * Codes the TypeScript client raises on its own side. They never travel on the wire, but they
 * share the namespace of {@link ErrorCode} and follow the same rule: never reused.
 */
export const ClientErrorCode = {
  E_CLOSED: 'E_CLOSED',
  E_TIMEOUT: 'E_TIMEOUT',
  E_UNAUTHORIZED: 'E_UNAUTHORIZED',
  E_CONNECT: 'E_CONNECT',
} as const;

/** A client-side error code. */
export type ClientErrorCode = (typeof ClientErrorCode)[keyof typeof ClientErrorCode];

/** One entry of the catalog: what the code means and when the server sends it. */
export interface ErrorInfo {
  /** One sentence for the docs and for people reading logs. */
  readonly description: string;
  /** True if the server closes the socket after sending this code. */
  readonly closes: 'never' | 'always' | 'before hello';
}

/** The catalog: every protocol error code with its description. Tests check docs/protocol.md lists each. */
export const ERRORS = {
  E_PROTOCOL: {
    description: 'The frame is not one MessagePack map of standard types with a string `t`, or the first frame is not `hello`.',
    closes: 'before hello',
  },
  E_VERSION: {
    description: '`hello.v` names a protocol version this server does not speak (only 1 exists).',
    closes: 'always',
  },
  E_UNKNOWN_MESSAGE: {
    description: '`t` names no message a client may send.',
    closes: 'never',
  },
  E_BAD_FIELD: {
    description: 'A field is missing, has the wrong type or is out of range; the message names the field path and why.',
    closes: 'never',
  },
  E_UNKNOWN_TREE: {
    description: 'A spawn names a tree the service has not loaded.',
    closes: 'never',
  },
  E_DUPLICATE_AGENT: {
    description: 'A spawn uses an agent id that already exists in the session.',
    closes: 'never',
  },
  E_UNKNOWN_AGENT: {
    description: 'A despawn, bb, result or lod entry names an agent the session does not have.',
    closes: 'never',
  },
  E_UNKNOWN_KEY: {
    description: "A blackboard key is not declared by the agent's tree.",
    closes: 'never',
  },
  E_LIMIT: {
    description: 'A limit was exceeded: frame size, list length, agents per session, message rate.',
    closes: 'never',
  },
  E_PLUGIN: {
    description: "A plugin threw while ticking an agent: that agent is stopped, the others go on.",
    closes: 'never',
  },
  E_INTERNAL: {
    description: 'A bug in the service; the message carries no internals. Please report it.',
    closes: 'never',
  },
  E_RECORDING: {
    description: "The session's recording stopped (disk full, folder not writable, the disk fell behind); the session goes on unrecorded.",
    closes: 'never',
  },
  E_RELOAD: {
    description: 'A tree change (an edited file, PUT or DELETE /v1/trees/:name) was invalid and was not installed: the trees in use are unchanged. Informational; GET /v1/trees lists the errors.',
    closes: 'never',
  },
} as const satisfies { readonly [C in ErrorCode]: ErrorInfo };

/**
 * Codes only the HTTP API answers with (`{ code, message }` bodies), besides the protocol's
 * {@link ErrorCode}s. `E_UNAUTHORIZED` is the same refusal the client catalog names. Never reused.
 */
export const HttpErrorCode = {
  E_UNAUTHORIZED: 'E_UNAUTHORIZED',
  E_UNKNOWN_SESSION: 'E_UNKNOWN_SESSION',
  E_WRONG_SESSION: 'E_WRONG_SESSION',
  E_UNAVAILABLE: 'E_UNAVAILABLE',
  E_NOT_FOUND: 'E_NOT_FOUND',
} as const;

/** An HTTP-only error code. */
export type HttpErrorCode = (typeof HttpErrorCode)[keyof typeof HttpErrorCode];

/** The catalog of HTTP-only codes, documented in docs/protocol.md beside the protocol codes. */
export const HTTP_ERRORS = {
  E_UNAUTHORIZED: { description: 'API keys are configured and the request (or WebSocket upgrade) carries none or a wrong one: HTTP 401.' },
  E_UNKNOWN_SESSION: { description: 'The route names a session that does not exist (or was freed after its idle grace): HTTP 404.' },
  E_WRONG_SESSION: { description: 'The session is driven by its WebSocket connection and cannot be driven over HTTP: HTTP 409.' },
  E_UNAVAILABLE: { description: 'The service is starting or draining and accepts no new sessions: HTTP 503 (also at the WebSocket upgrade).' },
  E_NOT_FOUND: { description: 'No such route: HTTP 404.' },
} as const satisfies { readonly [C in HttpErrorCode]: { readonly description: string } };

/** The catalog of client-side codes, documented next to the protocol codes. */
export const CLIENT_ERRORS = {
  E_CLOSED: { description: 'The socket closed (or was not open) before the request was answered.' },
  E_TIMEOUT: { description: 'No answer within the request timeout.' },
  E_UNAUTHORIZED: { description: 'The WebSocket upgrade was answered 401: missing or wrong API key.' },
  E_CONNECT: { description: 'The connection could not be opened (network error, or an HTTP status other than 101/401).' },
} as const satisfies { readonly [C in ClientErrorCode]: { readonly description: string } };

/** Longest piece of client-supplied text quoted back in an error message. */
const QUOTE_MAX = 64;

/** Quotes client-supplied text for an error message: JSON-escaped and cut to a safe length. */
export function quote(text: string): string {
  return JSON.stringify(text.length > QUOTE_MAX ? `${text.slice(0, QUOTE_MAX)}…` : text);
}

/** Formats an agent id for a message: integers bare, strings quoted (`7`, `"orc-7"`). */
export function formatAgentId(id: number | string): string {
  return typeof id === 'number' ? String(id) : quote(id);
}

/**
 * Message templates, one per situation. Every error message the protocol module produces comes
 * from here, so tests can assert exact text and the docs can show it.
 */
export const Msg = {
  // E_PROTOCOL
  notMessagePack: (why: string): string => `frame is not valid MessagePack: ${why}`,
  notAMap: (): string => 'frame must be a MessagePack map',
  missingType: (): string => 't: missing; every frame names its message type in t',
  typeNotString: (): string => 't: expected a string naming the message type',
  extensionType: (type: number): string =>
    `MessagePack extension type ${type} is not part of the protocol (only the timestamp, -1)`,
  badMapKey: (): string => 'map keys must be strings or integers',
  protoKey: (): string => 'map key "__proto__" is not allowed',
  tooDeep: (max: number): string => `values nest deeper than ${max} levels`,
  trailingBytes: (): string => 'frame holds bytes after the first value; send one message per frame',
  truncated: (): string => 'frame ends in the middle of a value',
  reservedByte: (): string => 'frame uses the reserved byte 0xc1',
  helloFirst: (t: string): string => `the first message must be hello, got ${quote(t)}`,
  // E_VERSION
  version: (v: number): string => `protocol version ${v} is not supported; this server speaks 1`,
  // E_UNKNOWN_MESSAGE
  unknownMessage: (t: string): string => `unknown message type ${quote(t)}`,
  serverMessage: (t: string): string => `${quote(t)} is a message the server sends, not one a client may send`,
  // E_BAD_FIELD
  badField: (path: string, why: string): string => `${path}: ${why}`,
  /** After the first `LIMITS.maxEntryErrors` refused entries of a bb/result/snapshot message. */
  moreEntries: (omitted: number): string => `${omitted} more entries were refused`,
  // E_UNKNOWN_TREE
  unknownTree: (tree: string): string => `unknown tree ${quote(tree)}`,
  // E_DUPLICATE_AGENT
  duplicateAgent: (id: number | string): string => `agent ${formatAgentId(id)} already exists in this session`,
  // E_UNKNOWN_AGENT
  unknownAgent: (id: number | string): string => `no agent ${formatAgentId(id)} in this session`,
  // E_UNKNOWN_KEY
  unknownKey: (key: string, tree: string): string =>
    `blackboard key ${quote(key)} is not declared by tree ${quote(tree)}`,
  // E_LIMIT
  frameTooLarge: (bytes: number, max: number): string =>
    `frame of ${bytes} bytes exceeds the limit of ${max} bytes`,
  listTooLong: (path: string, length: number, max: number): string =>
    `${path}: ${length} entries exceed the limit of ${max}`,
  limit: (what: string, max: number): string => `${what} exceeds the limit of ${max}`,
  rateLimited: (perSecond: number): string =>
    `more than ${perSecond} messages per second on this connection: reading paused, later messages are delayed (none dropped)`,
  // E_PLUGIN
  plugin: (plugin: string, why: string): string => `plugin ${quote(plugin)} threw: ${why}`,
  // E_INTERNAL
  internal: (): string => 'internal error; the service logged the details',
} as const;
