// The Canopy client SDK, shipped as the `@canopy-bt/client` package (packages/client): game servers,
// the demo, the tests and the benchmarks all speak the protocol through it.

export {
  CanopyClient,
  type ClientEvents,
  type ConnectOptions,
  type Decisions,
  type DespawnResult,
  type SnapshotInput,
  type SpawnResult,
} from './client.js';
export { DEFAULT_RECONNECT, backoffDelay, type ReconnectOptions } from './backoff.js';
export { Emitter, type Listener } from './emitter.js';
export { CanopyError } from './errors.js';
export { RowEncoder } from './row-encoder.js';
export { RowWriter } from './rows.js';
export {
  ClientErrorCode,
  ErrorCode,
  LIMITS,
  PROTOCOL_VERSION,
  type ActionDecision,
  type ActionResult,
  type ActionStatus,
  type AgentError,
  type AgentId,
  type BlackboardEntry,
  type CancelDecision,
  type DoneDecision,
  type EntryError,
  type Mode,
  type Observation,
  type ObservationRow,
  type RootStatus,
  type SpawnAgent,
  type LodEntry,
  type ValueMap,
  type WelcomeLimits,
  type WelcomeMessage,
} from '../protocol/index.js';
