// The one place bytes become values and back: a single reused msgpackr Packr/Unpackr pair set up
// for standard MessagePack only, behind a byte-level check that makes decoding untrusted input safe.

import { Packr, Unpackr, type Options } from 'msgpackr';
import { Msg } from './codes.js';
import { LIMITS } from './limits.js';

/**
 * Standard MessagePack only, so that C#, C++ and Go clients read every frame:
 * no records, no structured clone, no bundled strings, no msgpackr-only types; maps decode to
 * plain objects; 64-bit integers decode to numbers (values beyond 2^53 lose precision, and the
 * validator rejects them where an exact integer is needed).
 */
const OPTIONS: Options = {
  useRecords: false,
  structuredClone: false,
  moreTypes: false,
  bundleStrings: false,
  sequential: false,
  mapsAsObjects: true,
  int64AsType: 'number',
  // `undefined` would otherwise become msgpackr's ext-0 "undefined", which other decoders reject.
  encodeUndefinedAsNil: true,
  // fixmap for small maps: the canonical, smallest form other encoders produce too.
  variableMapSize: true,
  // Decoded binary values must not pin (or alias) the whole inbound frame.
  copyBuffers: true,
};

const packr = new Packr(OPTIONS);
const unpackr = new Unpackr(OPTIONS);

/** Thrown by {@link decode}: the bytes are not one standard MessagePack value within the limits. */
export class DecodeError extends Error {
  override readonly name = 'DecodeError';
}

/**
 * Encodes one value as standard MessagePack. The returned Buffer is a view of msgpackr's shared
 * output buffer that later calls never overwrite, so it may be queued on a socket as is (copy it
 * before transferring its ArrayBuffer to another thread).
 * Integers that fit 32 bits are written as integers, other numbers as float64
 * (see `wireInt` in encode.ts for exact 64-bit integers).
 */
export function encode(value: unknown): Buffer {
  return packr.pack(value);
}

/**
 * Decodes one frame. Never returns msgpackr-only types: the frame is first checked byte by byte
 * ({@link checkFrame}), so the result is built only of nil, booleans, numbers, strings,
 * Uint8Arrays (bin), Dates (timestamp extension), arrays and plain objects, nested at most
 * `LIMITS.maxDepth` deep. A `__proto__` key is refused, so decoding never touches a prototype.
 * @throws {DecodeError} with a message fit to send back as `E_PROTOCOL`.
 */
export function decode(bytes: Uint8Array): unknown {
  const problem = checkFrame(bytes, LIMITS.maxDepth);
  if (problem !== undefined) throw new DecodeError(problem);
  try {
    return unpackr.unpack(bytes);
  } catch {
    // Unreachable after checkFrame as far as we know; msgpackr's own text may quote the data.
    throw new DecodeError(Msg.notMessagePack('the decoder refused it'));
  }
}

/** Decodes bytes this process encoded itself (no checks): e.g. EncodedTuples made by a pool worker. */
export function decodeTrusted(bytes: Uint8Array): unknown {
  return unpackr.unpack(bytes);
}

/**
 * Decodes `count` consecutive values, `bytes` cut from a frame's list at nesting level `level` (the frame's map
 * is level 1, a list in it level 2): with the same checks as the whole frame would have, their nesting counted
 * from there. Undefined when they do not pass: decoding the whole frame then says why. For decoding a large
 * list in parts (ws.ts: a large spawn), other work in between.
 */
export function decodeItems(bytes: Uint8Array, count: number, level: number): unknown[] | undefined {
  const wrapped = new Uint8Array(bytes.length + 5);
  wrapped[0] = 0xdd;
  new DataView(wrapped.buffer).setUint32(1, count);
  wrapped.set(bytes, 5);
  if (checkFrame(wrapped, LIMITS.maxDepth - (level - 1)) !== undefined) return undefined;
  try {
    return unpackr.unpack(wrapped) as unknown[];
  } catch {
    return undefined;
  }
}

// Stack of the containers being scanned: items still to read, and whether it is a map.
// Module-level and reused: scanning is synchronous and allocates nothing.
const left = new Float64Array(LIMITS.maxDepth + 2);
const isMap = new Uint8Array(LIMITS.maxDepth + 2);

// "__proto__" in UTF-8.
const PROTO = [0x5f, 0x5f, 0x70, 0x72, 0x6f, 0x74, 0x6f, 0x5f, 0x5f] as const;

function isProtoKey(bytes: Uint8Array, at: number): boolean {
  for (let i = 0; i < 9; i++) if (bytes[at + i] !== PROTO[i]) return false;
  return true;
}

/**
 * Checks that `bytes` hold exactly one standard MessagePack value: no truncation, no trailing
 * bytes, no reserved 0xc1, no extension type but the timestamp (-1), map keys only strings or
 * integers and never `"__proto__"`, nesting at most `maxDepth` (at most `LIMITS.maxDepth`).
 * Linear in the frame size; allocates nothing.
 * @returns undefined when the frame is acceptable, else the reason.
 */
export function checkFrame(bytes: Uint8Array, maxDepth: number = LIMITS.maxDepth): string | undefined {
  const end = bytes.length;
  const depthLimit = Math.min(maxDepth, LIMITS.maxDepth);
  let pos = 0;
  let depth = 0;
  left[0] = 1;
  isMap[0] = 0;
  for (;;) {
    while (left[depth] === 0) {
      if (depth === 0) return pos === end ? undefined : Msg.trailingBytes();
      depth--;
    }
    // Map items alternate key, value; counting down from 2n, a key is read when the count is even.
    const key = isMap[depth] === 1 && left[depth]! % 2 === 0;
    left[depth]!--;
    if (pos >= end) return Msg.truncated();
    const b = bytes[pos++]!;

    // Integers: valid keys and values.
    if (b <= 0x7f || b >= 0xe0) continue;
    if (b >= 0xcc && b <= 0xd3) {
      pos += 1 << ((b - 0xcc) & 3); // 1, 2, 4, 8 bytes for both the uint and the int family
      if (pos > end) return Msg.truncated();
      continue;
    }

    // Strings.
    let strLen = -1;
    if (b >= 0xa0 && b <= 0xbf) strLen = b & 0x1f;
    else if (b === 0xd9) {
      if (pos + 1 > end) return Msg.truncated();
      strLen = bytes[pos]!;
      pos += 1;
    } else if (b === 0xda) {
      if (pos + 2 > end) return Msg.truncated();
      strLen = (bytes[pos]! << 8) | bytes[pos + 1]!;
      pos += 2;
    } else if (b === 0xdb) {
      if (pos + 4 > end) return Msg.truncated();
      strLen = bytes[pos]! * 0x1000000 + ((bytes[pos + 1]! << 16) | (bytes[pos + 2]! << 8) | bytes[pos + 3]!);
      pos += 4;
    }
    if (strLen >= 0) {
      if (pos + strLen > end) return Msg.truncated();
      if (key && strLen === 9 && isProtoKey(bytes, pos)) return Msg.protoKey();
      pos += strLen;
      continue;
    }

    if (key) return b === 0xc1 ? Msg.reservedByte() : Msg.badMapKey();

    // Containers.
    let count = -1;
    let map = 0;
    if (b >= 0x80 && b <= 0x8f) {
      count = (b & 0x0f) * 2;
      map = 1;
    } else if (b >= 0x90 && b <= 0x9f) {
      count = b & 0x0f;
    } else if (b === 0xdc || b === 0xde) {
      if (pos + 2 > end) return Msg.truncated();
      count = (bytes[pos]! << 8) | bytes[pos + 1]!;
      pos += 2;
      if (b === 0xde) {
        count *= 2;
        map = 1;
      }
    } else if (b === 0xdd || b === 0xdf) {
      if (pos + 4 > end) return Msg.truncated();
      count = bytes[pos]! * 0x1000000 + ((bytes[pos + 1]! << 16) | (bytes[pos + 2]! << 8) | bytes[pos + 3]!);
      pos += 4;
      if (b === 0xdf) {
        count *= 2;
        map = 1;
      }
    }
    if (count >= 0) {
      // Every item takes at least one byte: a count beyond the bytes left is a truncated frame.
      if (count > end - pos) return Msg.truncated();
      if (count > 0) {
        if (depth >= depthLimit) return Msg.tooDeep(depthLimit);
        depth++;
        left[depth] = count;
        isMap[depth] = map;
      } else if (depth >= depthLimit) {
        return Msg.tooDeep(depthLimit);
      }
      continue;
    }

    switch (b) {
      case 0xc0: // nil
      case 0xc2: // false
      case 0xc3: // true
        continue;
      case 0xca: // float32
        pos += 4;
        break;
      case 0xcb: // float64
        pos += 8;
        break;
      case 0xc4: // bin8
      case 0xc5: // bin16
      case 0xc6: {
        // bin32
        const size = b === 0xc4 ? 1 : b === 0xc5 ? 2 : 4;
        if (pos + size > end) return Msg.truncated();
        const len = readLength(bytes, pos, size);
        pos += size + len;
        break;
      }
      case 0xd4: // fixext 1, 2, 4, 8, 16
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8: {
        if (pos + 1 > end) return Msg.truncated();
        const len = 1 << (b - 0xd4);
        const problem = checkExtension(bytes[pos]!, len);
        if (problem !== undefined) return problem;
        pos += 1 + len;
        break;
      }
      case 0xc7: // ext 8, 16, 32
      case 0xc8:
      case 0xc9: {
        const size = b === 0xc7 ? 1 : b === 0xc8 ? 2 : 4;
        if (pos + size + 1 > end) return Msg.truncated();
        const len = readLength(bytes, pos, size);
        const problem = checkExtension(bytes[pos + size]!, len);
        if (problem !== undefined) return problem;
        pos += size + 1 + len;
        break;
      }
      default: // 0xc1, never used
        return Msg.reservedByte();
    }
    if (pos > end) return Msg.truncated();
  }
}

function readLength(bytes: Uint8Array, at: number, size: number): number {
  if (size === 1) return bytes[at]!;
  if (size === 2) return (bytes[at]! << 8) | bytes[at + 1]!;
  return bytes[at]! * 0x1000000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);
}

/** The timestamp extension (-1, 4/8/12 bytes) is the only one standard MessagePack defines. */
function checkExtension(typeByte: number, length: number): string | undefined {
  const type = (typeByte << 24) >> 24;
  if (type === -1 && (length === 4 || length === 8 || length === 12)) return undefined;
  return Msg.extensionType(type);
}
