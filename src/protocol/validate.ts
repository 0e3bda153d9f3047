// Validation of every inbound frame: bytes in, a typed ClientMessage (or the error to send back)
// out. Never throws. Lists are checked entry by entry so that a bad entry never spoils the good ones.

import { ErrorCode, Msg, quote } from './codes.js';
import { DecodeError, decode } from './codec.js';
import { LIMITS, PROTOCOL_VERSION } from './limits.js';
import { readSnapshotHead, readSnapshotRows } from './rows.js';
import { ResultColumns, type KnownIds, type ResultList } from './results.js';
import {
  agentIdFromKey,
  type ActionResult,
  type AgentId,
  type BlackboardEntry,
  type ClientMessage,
  type EntryError,
  type HelloMessage,
  type LodEntry,
  type Mode,
  type Observation,
  type ObservationRow,
  type SnapshotMessage,
  type SpawnAgent,
  type ValueMap,
} from './messages.js';

/** What the session knows that the checks depend on. Everything is optional. */
export interface ParseOptions {
  /**
   * Number of fields the session declared in `hello.fields` (0 when none). When given, rows of
   * `snapshot.agents` must hold exactly the id and that many values, and rows are refused when it
   * is 0. When left out, row widths are not checked.
   */
  readonly fieldCount?: number;
  /** The session's mode. When `lockstep`, `snapshot.time` is required. */
  readonly mode?: Mode;
  /**
   * Check the rows of a snapshot without decoding them when they are plain enough ({@link FrameRows}
   * in `msg.agents`: the frame's bytes and each row's id and offset; the agent pool hands the bytes to
   * the thread owning the agents, which reads the values). Needs `fieldCount` above 0. Otherwise,
   * and for any frame the fast path declines, rows come as arrays. Errors are the same either way.
   */
  readonly packRows?: boolean;
  /** The session's string ids: a snapshot's results read by the fast path name them without a string built each. */
  readonly knownIds?: KnownIds;
}

/**
 * A message that passed validation. `msg` holds only the valid entries of its lists; `errors`
 * says what was dropped and why (with the agent id when it could be read). For `bb`, `result`
 * and `snapshot`, at most `LIMITS.maxEntryErrors` errors are kept and the rest counted in
 * `omittedErrors`; `spawn` and `despawn` keep them all, since their replies list every id.
 */
export interface ParseOk<M extends ClientMessage = ClientMessage> {
  readonly ok: true;
  readonly msg: M;
  readonly errors: readonly EntryError[];
  readonly omittedErrors: number;
}

/**
 * A message refused as a whole: send `error` with this `code`, `message` and `re` (the
 * message's `id`, when it had a valid one), and drop the message.
 */
export interface ParseFailure {
  readonly ok: false;
  readonly code: ErrorCode;
  readonly message: string;
  readonly re?: number;
  /**
   * The JSON path of the field at fault (`hello.fields[2]`), for `E_BAD_FIELD` failures and the
   * limit on `hello.fields`; its first segment is the message type. Callers branch on this, not
   * on the text of `message`.
   */
  readonly field?: string;
}

/** The outcome of {@link parseClientFrame}. */
export type ParseResult = ParseOk | ParseFailure;

const NO_ERRORS: readonly EntryError[] = Object.freeze([]);

const ID_REASON = `expected an integer or a non-empty string of at most ${LIMITS.maxAgentIdLength} characters`;
const INTEGER_REASON = 'expected an integer';
const SAFE_INTEGER_REASON = 'expected an integer between -(2^53 - 1) and 2^53 - 1';

/**
 * Validates one inbound frame. Never throws, whatever the bytes.
 *
 * Order of checks: size (`E_LIMIT`), a MessagePack map of standard types with a string `t`
 * (`E_PROTOCOL`), a known client message type (`E_UNKNOWN_MESSAGE`), `id` an integer and every
 * field of the message (`E_BAD_FIELD`, `E_VERSION` for `hello.v`, `E_LIMIT` for list lengths).
 * Unknown fields are ignored, and nil in an optional field means "absent". Whether the message
 * is allowed now (hello first, mode rules beyond {@link ParseOptions}) is the session's call.
 *
 * @param bytes one binary WebSocket message
 * @param maxFrameBytes the service's frame size limit
 * @param options what the session knows (declared fields, mode), for the checks that need it
 */
export function parseClientFrame(bytes: Uint8Array, maxFrameBytes: number, options?: ParseOptions): ParseResult {
  if (bytes.length > maxFrameBytes) {
    return fail(ErrorCode.E_LIMIT, Msg.frameTooLarge(bytes.length, maxFrameBytes));
  }
  // Refuse a non-map before decoding what may be megabytes of something else.
  if (bytes.length > 0 && !isMapHeader(bytes[0]!)) return fail(ErrorCode.E_PROTOCOL, Msg.notAMap());
  if (options?.packRows === true && options.fieldCount !== undefined && options.fieldCount > 0) {
    const fast = readSnapshotRows(bytes, options.fieldCount, true, options.knownIds ?? null);
    if (fast !== undefined) {
      const parsed = parseClientMessage(fast.fields, options);
      if (parsed.ok && parsed.msg.t === 'snapshot') return { ...parsed, msg: { ...parsed.msg, agents: fast.rows } };
      // A field is wrong: the ordinary path reports it exactly as it always does.
    }
  }
  let value: unknown;
  try {
    value = decode(bytes);
  } catch (error) {
    const message = error instanceof DecodeError ? error.message : Msg.notMessagePack('the decoder refused it');
    return fail(ErrorCode.E_PROTOCOL, message);
  }
  return parseClientMessage(value, options);
}

/** A snapshot whose fields passed validation and whose rows are still unread (parseSnapshotHead). */
export interface UnreadRows {
  /** The message as parseClientFrame gives it, `agents` left out. */
  readonly parsed: ParseOk<SnapshotMessage>;
  /** Where the rows start in the frame, and how many there are (they end with the frame). */
  readonly start: number;
  readonly count: number;
}

/**
 * The first half of parseClientFrame with `packRows` for a snapshot whose rows the main thread does not read
 * (docs/capacity.md): its other fields read and validated, its rows' header checked, the rows themselves left for
 * the threads owning the agents (checkFrameRows). Undefined for any frame that is not such a snapshot with every
 * other field valid (agents not the last field, a field wrong, not a snapshot...): the caller parses it with
 * parseClientFrame. If the rows then fail the check, parseClientFrame gives what it always gave for the frame.
 */
export function parseSnapshotHead(bytes: Uint8Array, maxFrameBytes: number, options: ParseOptions): UnreadRows | undefined {
  const width = options.fieldCount ?? 0;
  if (options.packRows !== true || width <= 0 || bytes.length > maxFrameBytes || bytes.length === 0 || !isMapHeader(bytes[0]!)) return undefined;
  const head = readSnapshotHead(bytes, width, options.knownIds ?? null);
  if (head === undefined) return undefined;
  const parsed = parseClientMessage(head.fields, options);
  if (!parsed.ok || parsed.msg.t !== 'snapshot') return undefined;
  return { parsed: parsed as ParseOk<SnapshotMessage>, start: head.start, count: head.count };
}

function isMapHeader(byte: number): boolean {
  return (byte >= 0x80 && byte <= 0x8f) || byte === 0xde || byte === 0xdf;
}

/**
 * Validates a message that is already decoded (for example a JSON body of the HTTP API), with
 * the same rules and messages as {@link parseClientFrame} from the top-level map on. The caller
 * vouches that free-form values (`world`, blackboard values, observations) are plain data from a
 * safe decoder such as `JSON.parse` or {@link decode}; they are passed through unchecked.
 */
export function parseClientMessage(value: unknown, options?: ParseOptions): ParseResult {
  if (!isPlainMap(value)) return fail(ErrorCode.E_PROTOCOL, Msg.notAMap());
  const rawId = opt(value.id);
  const re = typeof rawId === 'number' && Number.isSafeInteger(rawId) ? rawId : undefined;
  const t = value.t;
  if (t === undefined) return fail(ErrorCode.E_PROTOCOL, Msg.missingType(), re);
  if (typeof t !== 'string') return fail(ErrorCode.E_PROTOCOL, Msg.typeNotString(), re);
  if (!isClientType(t)) {
    const message = isServerType(t) ? Msg.serverMessage(t) : Msg.unknownMessage(t);
    return fail(ErrorCode.E_UNKNOWN_MESSAGE, message, re);
  }
  if (rawId !== undefined && re === undefined) {
    const why = typeof rawId === 'number' && Number.isInteger(rawId) ? SAFE_INTEGER_REASON : INTEGER_REASON;
    return badField(`${t}.id`, why, undefined);
  }
  switch (t) {
    case 'hello':
      return parseHello(value, re);
    case 'spawn':
      return parseSpawn(value, re);
    case 'despawn':
      return parseDespawn(value, re);
    case 'bb':
      return parseBlackboard(value, re);
    case 'snapshot':
      return parseSnapshot(value, re, options);
    case 'result':
      return parseResult(value, re);
    case 'lod':
      return parseLod(value, re);
    case 'ping':
      return parsePing(value, re);
    case 'bye':
      return ok({ t: 'bye', id: re });
  }
}

type ClientType = ClientMessage['t'];

function isClientType(t: string): t is ClientType {
  switch (t) {
    case 'hello':
    case 'spawn':
    case 'despawn':
    case 'bb':
    case 'snapshot':
    case 'result':
    case 'lod':
    case 'ping':
    case 'bye':
      return true;
    default:
      return false;
  }
}

function isServerType(t: string): boolean {
  switch (t) {
    case 'welcome':
    case 'spawned':
    case 'despawned':
    case 'decisions':
    case 'pong':
    case 'error':
    case 'goodbye':
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Messages

type RawMap = Record<string, unknown>;

function parseHello(m: RawMap, re: number | undefined): ParseResult {
  const v = opt(m.v);
  if (!isSafeInt(v)) return badField('hello.v', INTEGER_REASON, re);
  if (v !== PROTOCOL_VERSION) return fail(ErrorCode.E_VERSION, Msg.version(v), re);

  const mode = opt(m.mode);
  if (mode !== undefined && mode !== 'fixed' && mode !== 'lockstep') {
    return badField('hello.mode', 'expected "fixed" or "lockstep"', re);
  }
  const hz = opt(m.hz);
  if (hz !== undefined && !(typeof hz === 'number' && hz > 0 && hz <= LIMITS.maxHz)) {
    return badField('hello.hz', `expected a number in (0, ${LIMITS.maxHz}]`, re);
  }
  const fields = opt(m.fields);
  if (fields !== undefined) {
    const problem = checkFields(fields, re);
    if (problem !== undefined) return problem;
  }
  const resume = opt(m.resume);
  if (resume !== undefined && !isBoundedString(resume, LIMITS.maxResumeTokenLength)) {
    return badField('hello.resume', `expected a non-empty string of at most ${LIMITS.maxResumeTokenLength} characters`, re);
  }
  const record = opt(m.record);
  if (record !== undefined && typeof record !== 'boolean') return badField('hello.record', 'expected true or false', re);
  const msg: HelloMessage = {
    t: 'hello',
    id: re,
    v,
    mode: (mode ?? 'fixed') as Mode,
    hz: hz as number | undefined,
    fields: fields as readonly string[] | undefined,
    resume: resume as string | undefined,
    ...(record === true ? { record: true } : {}),
  };
  return ok(msg);
}

function checkFields(fields: unknown, re: number | undefined): ParseFailure | undefined {
  if (!Array.isArray(fields)) return badField('hello.fields', 'expected a list of strings', re);
  if (fields.length > LIMITS.maxFields) {
    return { ...fail(ErrorCode.E_LIMIT, Msg.listTooLong('hello.fields', fields.length, LIMITS.maxFields), re), field: 'hello.fields' };
  }
  const seen = new Set<string>();
  for (let i = 0; i < fields.length; i++) {
    const name: unknown = fields[i];
    if (!isBoundedString(name, LIMITS.maxFieldNameLength)) {
      return badField(`hello.fields[${i}]`, `expected a non-empty string of at most ${LIMITS.maxFieldNameLength} characters`, re);
    }
    if (seen.has(name)) return badField(`hello.fields[${i}]`, `duplicate field name ${quote(name)}`, re);
    // An observation is an object keyed by these names: "__proto__" would name its prototype, not a field.
    if (name === '__proto__') return badField(`hello.fields[${i}]`, '"__proto__" is not allowed as a field name', re);
    seen.add(name);
  }
  return undefined;
}

function parseSpawn(m: RawMap, re: number | undefined): ParseResult {
  const list = m.agents;
  const problem = checkList('spawn.agents', list, re);
  if (problem !== undefined) return problem;
  const entries = list as readonly unknown[];
  const errors = new Entries(Infinity);
  const agents: SpawnAgent[] = [];
  for (let i = 0; i < entries.length; i++) {
    const agent = spawnAgent(entries[i], i, errors);
    if (agent !== false) agents.push(agent);
  }
  return ok({ t: 'spawn', id: re, agents }, errors);
}

/**
 * The JSON path of entry `i` of `list` (and `rest` within it), for an error: built only when an entry is refused, not
 * for each entry checked (a 20,000-agent cold start built 20,000 such strings on the main thread for nothing).
 */
function entryPath(list: string, i: number, rest = ''): string {
  return `${list}[${i}]${rest}`;
}

function spawnAgent(entry: unknown, i: number, errors: Entries): SpawnAgent | false {
  if (!isPlainMap(entry)) return errors.bad(undefined, entryPath('spawn.agents', i), 'expected a map');
  const id = entry.id;
  if (!isAgentId(id)) return errors.bad(undefined, entryPath('spawn.agents', i, '.id'), ID_REASON);
  const tree = entry.tree;
  if (typeof tree !== 'string') return errors.bad(id, entryPath('spawn.agents', i, '.tree'), 'expected a string');
  if (tree.length === 0 || tree.length > LIMITS.maxTreeNameLength) {
    return errors.bad(id, entryPath('spawn.agents', i, '.tree'), `expected a non-empty string of at most ${LIMITS.maxTreeNameLength} characters`);
  }
  const label = opt(entry.label);
  if (label !== undefined && !(typeof label === 'string' && label.length <= LIMITS.maxLabelLength)) {
    return errors.bad(id, entryPath('spawn.agents', i, '.label'), `expected a string of at most ${LIMITS.maxLabelLength} characters`);
  }
  const seed = opt(entry.seed);
  if (seed !== undefined && !isSafeInt(seed)) {
    return errors.bad(id, entryPath('spawn.agents', i, '.seed'), typeof seed === 'number' && Number.isInteger(seed) ? SAFE_INTEGER_REASON : INTEGER_REASON);
  }
  const bb = opt(entry.bb);
  if (bb !== undefined && !isPlainMap(bb)) return errors.bad(id, entryPath('spawn.agents', i, '.bb'), 'expected a map');
  const reload = opt(entry.reload);
  if (reload !== undefined && reload !== 'restart' && reload !== 'keep') return errors.bad(id, entryPath('spawn.agents', i, '.reload'), "expected 'restart' or 'keep'");
  const every = opt(entry.every);
  if (every !== undefined && !isEvery(every)) return errors.bad(id, entryPath('spawn.agents', i, '.every'), EVERY_REASON);
  // The two rare fields added only when set (not spread in from a temporary object per agent).
  const agent: { -readonly [K in keyof SpawnAgent]: SpawnAgent[K] } = {
    id,
    tree,
    label: label as string | undefined,
    seed: seed as number | undefined,
    bb: bb as ValueMap | undefined,
  };
  if (reload !== undefined) agent.reload = reload as 'restart' | 'keep';
  if (every !== undefined && every !== 1) agent.every = every as number;
  return agent;
}

function parseDespawn(m: RawMap, re: number | undefined): ParseResult {
  const list = m.ids;
  const problem = checkList('despawn.ids', list, re);
  if (problem !== undefined) return problem;
  const errors = new Entries(Infinity);
  const ids = keepValid(list as readonly unknown[], (id, i) =>
    isAgentId(id) ? true : errors.bad(undefined, `despawn.ids[${i}]`, ID_REASON),
  ) as readonly AgentId[];
  return ok({ t: 'despawn', id: re, ids }, errors);
}

function parseBlackboard(m: RawMap, re: number | undefined): ParseResult {
  const list = m.set;
  const problem = checkList('bb.set', list, re);
  if (problem !== undefined) return problem;
  const errors = new Entries(LIMITS.maxEntryErrors);
  const set = keepValid(list as readonly unknown[], (entry, i) => {
    if (!Array.isArray(entry) || entry.length !== 2) return errors.bad(undefined, entryPath('bb.set', i), 'expected a list [id, {key: value}]');
    const id: unknown = entry[0];
    if (!isAgentId(id)) return errors.bad(undefined, entryPath('bb.set', i, '[0]'), ID_REASON);
    if (!isPlainMap(entry[1])) return errors.bad(id, entryPath('bb.set', i, '[1]'), 'expected a map');
    return true;
  }) as readonly BlackboardEntry[];
  return ok({ t: 'bb', id: re, set }, errors);
}

const EVERY_REASON = `expected an integer from 1 to ${LIMITS.maxEvery} (tick every N session ticks)`;

function isEvery(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= LIMITS.maxEvery;
}

function parseLod(m: RawMap, re: number | undefined): ParseResult {
  const list = m.agents;
  const problem = checkList('lod.agents', list, re);
  if (problem !== undefined) return problem;
  const errors = new Entries(LIMITS.maxEntryErrors);
  const agents = keepValid(list as readonly unknown[], (entry, i) => {
    if (!Array.isArray(entry) || entry.length !== 2) return errors.bad(undefined, entryPath('lod.agents', i), 'expected a list [id, every]');
    const id: unknown = entry[0];
    if (!isAgentId(id)) return errors.bad(undefined, entryPath('lod.agents', i, '[0]'), ID_REASON);
    if (!isEvery(entry[1])) return errors.bad(id, entryPath('lod.agents', i, '[1]'), EVERY_REASON);
    return true;
  }) as readonly LodEntry[];
  return ok({ t: 'lod', id: re, agents }, errors);
}

function parseResult(m: RawMap, re: number | undefined): ParseResult {
  const list = m.results;
  const problem = checkList('result.results', list, re);
  if (problem !== undefined) return problem;
  const errors = new Entries(LIMITS.maxEntryErrors);
  const results = validResults(list as readonly unknown[], 'result.results', errors);
  return ok({ t: 'result', id: re, results }, errors);
}

function validResults(list: readonly unknown[], path: string, errors: Entries): readonly ActionResult[] {
  return keepValid(list, (entry, i) => {
    if (!Array.isArray(entry) || entry.length !== 3) return errors.bad(undefined, entryPath(path, i), 'expected a list [id, seq, status]');
    const id: unknown = entry[0];
    if (!isAgentId(id)) return errors.bad(undefined, entryPath(path, i, '[0]'), ID_REASON);
    const seq: unknown = entry[1];
    if (!(isSafeInt(seq) && seq >= 1)) return errors.bad(id, entryPath(path, i, '[1]'), 'expected a positive integer (the action seq)');
    const status: unknown = entry[2];
    if (status !== 'success' && status !== 'failure') return errors.bad(id, entryPath(path, i, '[2]'), 'expected "success" or "failure"');
    return true;
  }) as readonly ActionResult[];
}

function parseSnapshot(m: RawMap, re: number | undefined, options: ParseOptions | undefined): ParseResult {
  const tick = m.tick;
  if (!isSafeInt(tick)) {
    return badField('snapshot.tick', typeof tick === 'number' && Number.isInteger(tick) ? SAFE_INTEGER_REASON : INTEGER_REASON, re);
  }
  const time = opt(m.time);
  if (time === undefined) {
    if (options?.mode === 'lockstep') return badField('snapshot.time', 'expected a number (required in lockstep mode)', re);
  } else if (!(typeof time === 'number' && Number.isFinite(time))) {
    return badField('snapshot.time', 'expected a number', re);
  }
  const world = opt(m.world);
  if (world !== undefined && !isPlainMap(world)) return badField('snapshot.world', 'expected a map', re);
  const full = opt(m.full);
  if (full !== undefined && typeof full !== 'boolean') return badField('snapshot.full', 'expected a boolean', re);

  const errors = new Entries(LIMITS.maxEntryErrors);
  let results: ResultList | undefined;
  const rawResults = opt(m.results);
  // Columns come only from the fast path, which read every entry as validResults would keep it (readResults).
  if (rawResults instanceof ResultColumns) results = rawResults;
  else if (rawResults !== undefined) {
    const problem = checkList('snapshot.results', rawResults, re);
    if (problem !== undefined) return problem;
    results = validResults(rawResults as readonly unknown[], 'snapshot.results', errors);
  }

  let agents: SnapshotMessage['agents'];
  const rawAgents = opt(m.agents);
  if (Array.isArray(rawAgents)) {
    const fieldCount = options?.fieldCount;
    if (fieldCount === 0) {
      return badField('snapshot.agents', 'rows need fields declared in hello; without them send a map id → {field: value}', re);
    }
    if (rawAgents.length > LIMITS.maxListLength) {
      return fail(ErrorCode.E_LIMIT, Msg.listTooLong('snapshot.agents', rawAgents.length, LIMITS.maxListLength), re);
    }
    agents = validRows(rawAgents, fieldCount, errors);
  } else if (isPlainMap(rawAgents)) {
    let count = 0;
    let allValid = true;
    for (const key in rawAgents) {
      if (!Object.hasOwn(rawAgents, key)) continue;
      count++;
      if (allValid && !isObservationEntry(key, rawAgents[key])) allValid = false;
    }
    if (count > LIMITS.maxListLength) {
      return fail(ErrorCode.E_LIMIT, Msg.listTooLong('snapshot.agents', count, LIMITS.maxListLength), re);
    }
    agents = allValid ? (rawAgents as Readonly<Record<string, Observation>>) : keepValidObservations(rawAgents, errors);
  } else if (rawAgents !== undefined) {
    return badField('snapshot.agents', 'expected a list of rows or a map id → {field: value}', re);
  }

  const msg: SnapshotMessage = {
    t: 'snapshot',
    id: re,
    tick,
    time: time as number | undefined,
    world: world as ValueMap | undefined,
    agents,
    results,
    full,
  };
  return ok(msg, errors);
}

function validRows(rows: readonly unknown[], fieldCount: number | undefined, errors: Entries): readonly ObservationRow[] {
  // The hot path of the protocol (50k rows per snapshot): one type test and one id test per row.
  const width = fieldCount === undefined ? -1 : fieldCount + 1;
  return keepValid(rows, (row, i) => {
    if (!Array.isArray(row) || row.length === 0) {
      return errors.bad(undefined, `snapshot.agents[${i}]`, 'expected a row [id, ...values]');
    }
    const id: unknown = row[0];
    if (!isAgentId(id)) return errors.bad(undefined, `snapshot.agents[${i}][0]`, ID_REASON);
    if (width >= 0 && row.length !== width) {
      const fields = width === 2 ? '1 field' : `${width - 1} fields`;
      return errors.bad(id, `snapshot.agents[${i}]`, `expected ${width} values (the id and ${fields}), got ${row.length}`);
    }
    return true;
  }) as readonly ObservationRow[];
}

/** The valid entries of a map-form `snapshot.agents`, in a null-prototype copy. */
function keepValidObservations(raw: RawMap, errors: Entries): Readonly<Record<string, Observation>> {
  // Null prototype: a key such as "__proto__" (possible from JSON input) stays an ordinary key.
  const kept = Object.create(null) as Record<string, Observation>;
  for (const key in raw) {
    if (!Object.hasOwn(raw, key)) continue;
    const value = raw[key];
    if (isObservationEntry(key, value)) {
      kept[key] = value as Observation;
      continue;
    }
    const id = agentIdFromKey(key);
    if (!isAgentId(id)) errors.bad(undefined, `snapshot.agents[${quote(key)}]`, ID_REASON);
    else errors.bad(id, `snapshot.agents[${quote(key)}]`, 'expected a map');
  }
  return kept;
}

function isObservationEntry(key: string, value: unknown): boolean {
  return key.length > 0 && key.length <= LIMITS.maxAgentIdLength && isPlainMap(value);
}

function parsePing(m: RawMap, re: number | undefined): ParseResult {
  const n = opt(m.n);
  if (n !== undefined && !(typeof n === 'number' && Number.isFinite(n))) return badField('ping.n', 'expected a number', re);
  return ok({ t: 'ping', id: re, n: n as number | undefined });
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** Per-entry errors of one message, created lazily; beyond `cap` they are only counted. */
class Entries {
  list: EntryError[] | undefined;
  omitted = 0;
  constructor(private readonly cap: number) {}

  /** Records a bad entry (`E_BAD_FIELD`); returns false so a check can `return errors.bad(...)`. */
  bad(id: AgentId | undefined, path: string, why: string): false {
    const list = (this.list ??= []);
    if (list.length >= this.cap) {
      this.omitted++;
      return false;
    }
    const message = Msg.badField(path, why);
    list.push(id === undefined ? { code: ErrorCode.E_BAD_FIELD, message } : { id, code: ErrorCode.E_BAD_FIELD, message });
    return false;
  }
}

/**
 * The valid entries of `list`: the same array when all are valid (no copy on the common path),
 * else a new array of those for which `check` returned true.
 */
function keepValid(list: readonly unknown[], check: (entry: unknown, index: number) => boolean): readonly unknown[] {
  let kept: unknown[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const entry = list[i];
    if (check(entry, i)) {
      if (kept !== undefined) kept.push(entry);
    } else if (kept === undefined) {
      kept = list.slice(0, i);
    }
  }
  return kept ?? list;
}

function checkList(path: string, value: unknown, re: number | undefined): ParseFailure | undefined {
  if (!Array.isArray(value)) return badField(path, 'expected a list', re);
  if (value.length > LIMITS.maxListLength) {
    return fail(ErrorCode.E_LIMIT, Msg.listTooLong(path, value.length, LIMITS.maxListLength), re);
  }
  return undefined;
}

/** True for a map decoded from the wire (or parsed from JSON): not a list, binary or timestamp. */
function isPlainMap(value: unknown): value is RawMap {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isSafeInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

function isBoundedString(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max;
}

/** A safe integer, or a non-empty string of at most `LIMITS.maxAgentIdLength` characters. */
export function isAgentId(value: unknown): value is AgentId {
  if (typeof value === 'number') return Number.isSafeInteger(value);
  return typeof value === 'string' && value.length > 0 && value.length <= LIMITS.maxAgentIdLength;
}

/** nil in an optional field means absent (typed clients often write nil for unset fields). */
function opt(value: unknown): unknown {
  return value === null ? undefined : value;
}

function ok(msg: ClientMessage, errors?: Entries): ParseOk {
  if (errors === undefined || errors.list === undefined) return { ok: true, msg, errors: NO_ERRORS, omittedErrors: 0 };
  return { ok: true, msg, errors: errors.list, omittedErrors: errors.omitted };
}

function fail(code: ErrorCode, message: string, re?: number): ParseFailure {
  return re === undefined ? { ok: false, code, message } : { ok: false, code, message, re };
}

function badField(path: string, why: string, re: number | undefined): ParseFailure {
  return { ...fail(ErrorCode.E_BAD_FIELD, Msg.badField(path, why), re), field: path };
}
