// BehaviorTree.CPP v4 / Groot2 XML interop: import XML files as Canopy trees and export Canopy trees as XML.
// Uses only the engine (src/bt); the `canopy convert` command wraps it (cli.ts).

export { importXml, type ImportOptions, type ImportResult, type ImportedTrees } from './import.js';
export { exportXml, type ExportOptions } from './export.js';
export { InteropErrorCode, formatInteropError, type InteropError } from './errors.js';
export { translateScript, type Statement, type ScriptResult } from './script.js';
export { runConvert, type ConvertArgs } from './cli.js';
