// Canopy's behavior-tree engine: load and validate trees, compile them once, tick many agents.
// It knows nothing of sockets, fastify or threads; the service, tests and benchmarks all drive it alike.

export { Agent, PluginError, type AgentId, type AgentOptions, type AgentState, type AgentInspection } from './agent.js';
export { DecisionBuffer, type DecisionSink } from './decisions.js';
export { NodeCatalog, type ServiceKind, type ServiceBuilder } from './catalog.js';
export { compileTree, walkDefinition, type CompiledTree, type NodeInfo, type TreeSource, type TracedProgram } from './program.js';
export { Tracer, MAX_WATCH_TICKS } from './trace.js';
export { explainExpression } from './expr/explain.js';
export type { AgentFrame, NodeFrame, TraceEvent, WhyReport, WhyCheck, WhyTerm, WatchedFrame } from './frames.js';
export { ObservedCollector, type ObservedFields, type ObservedRoot } from './expr/reads.js';
export type { TreeDefinition, ServiceDefinition, AbortMode } from './definition.js';
export { Code, CODE_GENERATION, ident, joinCode, js, literal, type CodePart } from './codegen.js';
export { defineNode, type NodeKind, type NodeBuilder, type NodeBehavior, type ParamSpec, type ParamType, type NodeDefinition, type EmitFn, type NodeEmitter } from './node.js';
export { Status, STATUS_NAMES, type StatusCode, type TickStatus, type StatusName } from './status.js';
export { BUILTIN_NODES } from './nodes/index.js';
export {
  definePlugin,
  registerPlugin,
  type CanopyPlugin,
  type ActionPlugin,
  type ConditionPlugin,
  type ServicePlugin,
  type PluginContext,
  type PluginParams,
} from './plugins.js';
export { compileExpression, checkExpression, truthy, EXPRESSION_FUNCTIONS, type ExprContext, type CompiledExpr, type ExprError, type ExprCheck } from './expr/index.js';
export { TreeErrorCode, TREE_ERRORS, TreeWarningCode, TREE_WARNINGS, TreeMsg, didYouMean, InvalidTreeError, type ValidationError, type ValidationWarning } from './errors.js';
export { validateTree, checkTree, MAX_NODE_DEPTH, type ValidateContext, type TreeCheck } from './validate.js';
export { TreeLibrary, formatError, formatErrors, parseTreeText, parseTreeSource, TREE_FILE_EXTENSIONS, type LibraryResult, type ParsedTreeText, type ParsedTreeSource } from './library.js';
export { SourcePositions, locateProblems, type TextPosition } from './locate.js';
export { treeJsonSchema, formatTreeSchema } from './schema.js';
