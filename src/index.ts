// The `canopy` package: the behavior-tree engine, the wire protocol, the client SDK and the service,
// for programs that embed Canopy (tests, tools, a game server written in TypeScript).

export * from './bt/index.js';
export * from './protocol/index.js';
export * from './client/index.js';
// Both the engine and the protocol name agent ids; they are the same type (number | string).
export type { AgentId } from './protocol/index.js';
export { TreeLibrary, formatError, formatErrors, parseTreeText, type LibraryResult } from './bt/library.js';
export { validateTree, type ValidationError, type ValidateContext } from './bt/validate.js';
export { createServer, StartupError, type CanopyServer } from './service/server.js';
export { parseConfig, defaultConfig, ConfigError, type Config } from './service/config.js';
export type { ServerConfig, Tuning } from './service/context.js';
