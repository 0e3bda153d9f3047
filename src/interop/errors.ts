// Errors of the XML import and export: each names the file, the XML line and column, and what to do, in a sentence.

/** Stable codes of interop errors (documented in docs/interop.md). Tree validation errors keep the engine's `E_*` codes. */
export const InteropErrorCode = {
  /** The file is not well-formed XML. */
  XML_PARSE: 'E_XML_PARSE',
  /** The XML is well-formed but not a BehaviorTree.CPP v4 document (no `<root>`, a `<BehaviorTree>` without ID, …). */
  XML_SHAPE: 'E_XML_SHAPE',
  /** A node, attribute or value that has no exact Canopy equivalent. */
  XML_UNSUPPORTED: 'E_XML_UNSUPPORTED',
  /** A node whose attributes or children are wrong (a missing port, a bad number, a wrong child count). */
  XML_NODE: 'E_XML_NODE',
  /** A Script or a pre/post-condition that cannot be translated to a Canopy expression. */
  XML_SCRIPT: 'E_XML_SCRIPT',
  /** An `<include>` that cannot be read. */
  XML_INCLUDE: 'E_XML_INCLUDE',
} as const;
export type InteropErrorCode = (typeof InteropErrorCode)[keyof typeof InteropErrorCode];

/** One import or export problem. Engine validation errors of imported trees are mapped to their XML element. */
export interface InteropError {
  /** An interop code, or the engine's validation code (`E_EXPR_SYNTAX`, …) for imported trees that do not validate. */
  readonly code: string;
  readonly file: string;
  readonly line?: number;
  readonly column?: number;
  /** The tree (BehaviorTree ID) the problem is in, when there is one. */
  readonly tree?: string;
  readonly message: string;
}

/** `file:line:column: message [CODE]`, like the engine's formatError. */
export function formatInteropError(e: InteropError): string {
  const where = e.line === undefined ? e.file : `${e.file}:${e.line}:${e.column ?? 1}`;
  return `${where}: ${e.message} [${e.code}]`;
}
