// Every bound the validator enforces, in one object, so the service, the docs and `welcome.limits`
// agree. Frame size is configured per service (`maxFrameBytes`), the rest are fixed by the protocol.

/** The protocol version this module speaks (`hello.v`, `welcome.v`). */
export const PROTOCOL_VERSION = 1;

/** Bounds on inbound frames. Exceeding a length bound is `E_BAD_FIELD`; a list bound, `E_LIMIT`. */
export const LIMITS = {
  /** Suggested `maxFrameBytes` when the service config says nothing (16 MiB: 50k rows of 8 floats is ~4 MB). */
  defaultMaxFrameBytes: 16 * 1024 * 1024,
  /** Deepest nesting of maps and arrays in a frame (the frame's own map is level 1). */
  maxDepth: 32,
  /** Most entries in any list (`spawn.agents`, `despawn.ids`, `bb.set`, rows, `results`). */
  maxListLength: 1 << 20,
  /** Longest string agent id, in UTF-16 code units. */
  maxAgentIdLength: 128,
  /** Longest tree name. */
  maxTreeNameLength: 128,
  /** Longest agent label (`"Blue Team/Warriors/Foo"`). */
  maxLabelLength: 256,
  /** Most observation fields declared in `hello.fields`. */
  maxFields: 256,
  /** Longest observation field name. */
  maxFieldNameLength: 128,
  /** Longest blackboard key. */
  maxKeyLength: 128,
  /** Longest resume token. */
  maxResumeTokenLength: 256,
  /** Highest tick rate a client may ask for in fixed mode (exclusive lower bound is 0). */
  maxHz: 1000,
  /** Longest tick interval of level of detail (`spawn.agents[].every`, `lod`): about 14 hours at 20 Hz. */
  maxEvery: 1_000_000,
  /**
   * Most per-entry errors kept for one `bb`, `result` or `snapshot` message; the rest are counted
   * in `omittedErrors`. `spawn` and `despawn` keep every error because their replies list them.
   */
  maxEntryErrors: 100,
} as const;
