// The shape of a tree file (trees.md, "File"), as the loader hands it to validation and the compiler.

import type { NodeDefinition } from './node.js';

/** One service entry on a node: `values` (expressions) or a named `service` with its parameters. */
export interface ServiceDefinition {
  readonly every: number;
  readonly values?: Readonly<Record<string, string>>;
  readonly service?: string;
  readonly [param: string]: unknown;
}

/** A tree file's content. */
export interface TreeDefinition {
  readonly $schema?: string;
  readonly description?: string;
  readonly blackboard?: Readonly<Record<string, unknown>>;
  readonly root: NodeDefinition;
}

/** Names that would reach JavaScript prototypes; rejected as blackboard keys, args keys and in expressions. */
export const FORBIDDEN_NAMES: ReadonlySet<string> = new Set(['constructor', '__proto__', 'prototype']);

/** Fields every node may carry besides its kind's parameters. */
export const COMMON_FIELDS = ['type', 'name', 'if', 'abort', 'services', 'children', 'child'] as const;

export const ABORT_MODES = ['none', 'self', 'lower', 'both'] as const;
export type AbortMode = (typeof ABORT_MODES)[number];
