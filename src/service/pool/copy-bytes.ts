// Byte copies to and from shared memory (frames, decision columns) as memmove makes them.

const bufferCopy = Buffer.prototype.copy;

/**
 * `source[start, end)` copied into `target` from byte `at`. TypedArray#set to or from shared memory is V8's
 * word-by-word relaxed copy: on Node 26 half the speed of Buffer#copy, which is memmove (docs/capacity.md,
 * *Round twenty-two*).
 */
export function copyBytes(source: Uint8Array, target: Uint8Array, at: number, start: number, end: number): void {
  bufferCopy.call(source, target, at, start, end);
}
