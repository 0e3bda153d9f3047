// Recordings (docs/recording.md): the file format, the writer the service uses, the reader, exact
// replay (ReplaySession, verifyRecording) and what-if (whatIf). The inspector and the CLI start here.

export { EXTENSION, FORMAT_VERSION, Kind, type RecordingHeader, type SpawnRecord, type TickRecord, type TreeTable, type TreesReload } from './format.js';
export { RecordingWriter, type WriterOptions } from './writer.js';
export { partIndex, RecordingError, RecordingReader, recordingParts, type IndexEntry, type RawRecord } from './reader.js';
export { ReplaySession, verifyRecording, type FrameDifference, type ReplayOptions, type VerifyReport } from './replay.js';
export { whatIf, type AgentChange, type AgentDecisions, type Divergence, type WhatIfOptions, type WhatIfReport } from './whatif.js';
