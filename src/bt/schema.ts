// The JSON Schema of tree files, generated from the node catalog (BehaviorTree.CPP's writeTreeXSD):
// editors use it for completion and inline checks. Validation proper (expressions, blackboard keys) stays in validate.ts.

import type { NodeCatalog, ServiceKind } from './catalog.js';
import { ABORT_MODES, FORBIDDEN_NAMES } from './definition.js';
import type { NodeKind, ParamSpec } from './node.js';
import { PARAM_TYPES, writesSchema, type Schema } from './params.js';


const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

/** Where a node kind's schema lives under `$defs` (prefixed, so a plugin type cannot clash with a shared definition). */
function nodeRef(type: string): string {
  return `#/$defs/node.${type}`;
}

/**
 * The JSON Schema (draft 2020-12) of a tree file for every node kind and named service in
 * `catalog`, plugins' included. A node is a `oneOf` of one schema per kind, told apart by `type`;
 * each lists the kind's parameters (type, description, default, bounds), the common fields, and
 * `children` or `child` by category. Unknown fields are rejected, as validation does.
 */
export function treeJsonSchema(catalog: NodeCatalog): Schema {
  const kinds = catalog.allKinds();
  const defs: Record<string, Schema> = {
    key: {
      description: 'A key name: anything but constructor, __proto__ and prototype.',
      not: { enum: [...FORBIDDEN_NAMES] },
    },
    expression: {
      type: 'string',
      description: "An expression (docs/trees.md, Expressions): reads self, bb, world, agent, time, dt; a fixed text is quoted inside: \"'north'\".",
    },
    blackboard: {
      type: 'object',
      description: 'The keys this tree uses and their initial values. Reading or writing an undeclared key is a validation error.',
      propertyNames: { $ref: '#/$defs/key' },
    },
    node: {
      type: 'object',
      description: 'One node; `type` names its kind.',
      required: ['type'],
      properties: { type: { enum: catalog.typeNames() } },
      oneOf: kinds.map((k) => ({ $ref: nodeRef(k.type) })),
    },
    guard: {
      $ref: '#/$defs/expression',
      description: 'Guard: when the parent reaches this node and the guard is false, the node returns failure without being ticked.',
    },
    abort: {
      enum: [...ABORT_MODES],
      default: 'none',
      description: 'When the guard is re-checked after the node was entered: self (while it runs), lower (while a later sibling of a selector runs), both.',
    },
    services: {
      type: 'array',
      description: 'Services run when the node is entered, then every `every` seconds of tree time while it stays active, before its own tick.',
      items: { $ref: '#/$defs/service' },
    },
    service: {
      oneOf: [
        {
          type: 'object',
          description: 'Writes blackboard keys from expressions.',
          properties: { every: { $ref: '#/$defs/every' }, values: writesSchema('Blackboard key → expression.') },
          required: ['every', 'values'],
          additionalProperties: false,
        },
        ...catalog.allServices().map(serviceSchema),
      ],
    },
    every: { type: 'number', exclusiveMinimum: 0, description: 'Seconds of tree time between runs.' },
  };
  for (const kind of kinds) defs[`node.${kind.type}`] = nodeSchema(kind);
  return {
    $schema: DRAFT,
    title: 'Canopy behavior tree',
    description: 'A behavior tree file (docs/trees.md). Generated from the node catalog by src/tools/gen-schema.ts: do not edit by hand.',
    type: 'object',
    properties: {
      $schema: { type: 'string', description: 'Path or URL of this schema, for editors.' },
      description: { type: 'string', description: 'What the tree does, for people.' },
      blackboard: { $ref: '#/$defs/blackboard' },
      root: { $ref: '#/$defs/node' },
    },
    required: ['root'],
    additionalProperties: false,
    $defs: defs,
  };
}

/** The schema as the text of `trees/schema.json` (two-space indent, final newline). */
export function formatTreeSchema(catalog: NodeCatalog): string {
  return `${JSON.stringify(treeJsonSchema(catalog), null, 2)}\n`;
}

function nodeSchema(kind: NodeKind): Schema {
  const names = [kind.type, ...(kind.aliases ?? [])];
  const properties: Record<string, Schema> = {
    type: names.length === 1 ? { const: kind.type } : { enum: names },
    name: { type: 'string', description: 'A label shown in the debugger and logs.' },
    if: { $ref: '#/$defs/guard' },
    abort: { $ref: '#/$defs/abort' },
    services: { $ref: '#/$defs/services' },
  };
  const required = ['type'];
  if (kind.category === 'composite') {
    properties['children'] = { type: 'array', minItems: 1, items: { $ref: '#/$defs/node' }, description: 'One or more nodes.' };
    required.push('children');
  } else if (kind.category === 'decorator') {
    properties['child'] = { $ref: '#/$defs/node', description: 'Exactly one node.' };
    required.push('child');
  }
  for (const [name, spec] of Object.entries(kind.params)) {
    properties[name] = paramSchema(spec);
    if (spec.required === true) required.push(name);
  }
  return { type: 'object', title: kind.type, description: kind.description, properties, required, additionalProperties: false };
}

function serviceSchema(service: ServiceKind): Schema {
  const properties: Record<string, Schema> = { every: { $ref: '#/$defs/every' }, service: { const: service.name } };
  const required = ['every', 'service'];
  for (const [name, spec] of Object.entries(service.params)) {
    properties[name] = paramSchema(spec);
    if (spec.required === true) required.push(name);
  }
  return { type: 'object', title: service.name, description: service.description, properties, required, additionalProperties: false };
}

/** One declared parameter as JSON Schema; the same rules validate.ts applies, minus what needs context. */
function paramSchema(spec: ParamSpec): Schema {
  const annotations: Schema = { description: spec.description };
  if (spec.default !== undefined) annotations['default'] = spec.default;
  return PARAM_TYPES[spec.type].schema(spec, annotations);
}
