// The generated JSON Schema: the committed trees/schema.json is never stale, it covers every node kind
// (plugins' included), and every example tree passes it — checked with a small checker of the keywords we emit.

import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeCatalog } from '../../src/bt/catalog.js';
import { parseTreeText } from '../../src/bt/library.js';
import { registerPlugin } from '../../src/bt/plugins.js';
import { formatTreeSchema, treeJsonSchema } from '../../src/bt/schema.js';
import { validateTree } from '../../src/bt/validate.js';

const TREES = fileURLToPath(new URL('../../trees/', import.meta.url));

type Schema = boolean | { readonly [keyword: string]: unknown };

/** The keywords the generator may emit; the checker below implements each of them. */
const KEYWORDS = new Set([
  '$schema', 'title', 'description', 'default', '$defs',
  '$ref', 'type', 'enum', 'const', 'not', 'oneOf', 'anyOf',
  'properties', 'required', 'additionalProperties', 'propertyNames',
  'items', 'prefixItems', 'minItems', 'maxItems',
  'minimum', 'maximum', 'exclusiveMinimum', 'minLength',
]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Every subschema of `schema`, itself included. */
function* subschemas(schema: Schema): Generator<Schema> {
  yield schema;
  if (typeof schema === 'boolean') return;
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$defs' || k === 'properties') for (const s of Object.values(v as Record<string, Schema>)) yield* subschemas(s);
    else if (k === 'oneOf' || k === 'anyOf' || k === 'prefixItems') for (const s of v as Schema[]) yield* subschemas(s);
    else if (k === 'not' || k === 'items' || k === 'propertyNames' || (k === 'additionalProperties' && typeof v !== 'boolean')) yield* subschemas(v as Schema);
  }
}

function resolve(root: Schema, ref: string): Schema {
  if (!ref.startsWith('#/')) throw new Error(`unsupported $ref ${ref}`);
  let at: unknown = root;
  for (const part of ref.slice(2).split('/')) at = (at as Record<string, unknown>)[part];
  if (at === undefined) throw new Error(`dangling $ref ${ref}`);
  return at as Schema;
}

function typeMatches(type: string, v: unknown): boolean {
  switch (type) {
    case 'object': return isPlainObject(v);
    case 'array': return Array.isArray(v);
    case 'string': return typeof v === 'string';
    case 'number': return typeof v === 'number';
    case 'integer': return Number.isInteger(v);
    case 'boolean': return typeof v === 'boolean';
    case 'null': return v === null;
    default: throw new Error(`unsupported type ${type}`);
  }
}

/**
 * Problems of `v` against `schema` (draft 2020-12 semantics for the keywords in KEYWORDS). In `quick`
 * mode (inside oneOf/anyOf/not) it stops at the first problem: only whether there is one matters.
 */
function check(schema: Schema, v: unknown, root: Schema, at = '$', quick = false): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${at}: not allowed`];
  const errors: string[] = [];
  const s = schema;
  const fail = (message: string | string[]): boolean => {
    errors.push(...(Array.isArray(message) ? message : [message]));
    return quick && errors.length > 0;
  };
  const matches = (sub: Schema): boolean => check(sub, v, root, at, true).length === 0;
  for (const k of Object.keys(s)) if (!KEYWORDS.has(k)) throw new Error(`keyword ${k} is not supported by the test checker`);
  if (typeof s['$ref'] === 'string' && fail(check(resolve(root, s['$ref']), v, root, at, quick))) return errors;
  if (typeof s['type'] === 'string' && !typeMatches(s['type'], v) && fail(`${at}: expected ${s['type']}`)) return errors;
  if (Array.isArray(s['enum']) && !s['enum'].some((e) => JSON.stringify(e) === JSON.stringify(v)) && fail(`${at}: not in enum`)) return errors;
  if ('const' in s && JSON.stringify(s['const']) !== JSON.stringify(v) && fail(`${at}: expected ${JSON.stringify(s['const'])}`)) return errors;
  if (isPlainObject(v)) {
    const props = (s['properties'] ?? {}) as Record<string, Schema>;
    for (const key of (s['required'] ?? []) as string[]) if (!Object.hasOwn(v, key) && fail(`${at}: missing ${key}`)) return errors;
    // Declared properties first, in schema order (`type` leads), so a wrong branch fails fast.
    for (const key of Object.keys(props)) if (Object.hasOwn(v, key) && fail(check(props[key]!, v[key], root, `${at}.${key}`, quick))) return errors;
    for (const [key, value] of Object.entries(v)) {
      if (s['propertyNames'] !== undefined && fail(check(s['propertyNames'] as Schema, key, root, `${at}[${JSON.stringify(key)}]`, quick))) return errors;
      if (!Object.hasOwn(props, key) && s['additionalProperties'] !== undefined && fail(check(s['additionalProperties'] as Schema, value, root, `${at}.${key}`, quick))) return errors;
    }
  }
  if (Array.isArray(v)) {
    const prefix = (s['prefixItems'] ?? []) as Schema[];
    for (let k = 0; k < v.length; k++) {
      const sub = k < prefix.length ? prefix[k] : (s['items'] as Schema | undefined);
      if (sub !== undefined && fail(check(sub, v[k], root, `${at}[${k}]`, quick))) return errors;
    }
    if (typeof s['minItems'] === 'number' && v.length < s['minItems'] && fail(`${at}: too few items`)) return errors;
    if (typeof s['maxItems'] === 'number' && v.length > s['maxItems'] && fail(`${at}: too many items`)) return errors;
  }
  if (typeof v === 'number') {
    if (typeof s['minimum'] === 'number' && v < s['minimum'] && fail(`${at}: below minimum`)) return errors;
    if (typeof s['maximum'] === 'number' && v > s['maximum'] && fail(`${at}: above maximum`)) return errors;
    if (typeof s['exclusiveMinimum'] === 'number' && v <= s['exclusiveMinimum'] && fail(`${at}: not above exclusiveMinimum`)) return errors;
  }
  if (typeof v === 'string' && typeof s['minLength'] === 'number' && [...v].length < s['minLength'] && fail(`${at}: too short`)) return errors;
  if (s['not'] !== undefined && matches(s['not'] as Schema) && fail(`${at}: matches 'not'`)) return errors;
  if (Array.isArray(s['anyOf']) && !s['anyOf'].some(matches) && fail(`${at}: matches no anyOf branch`)) return errors;
  if (Array.isArray(s['oneOf'])) {
    const count = s['oneOf'].filter(matches).length;
    if (count !== 1) fail(`${at}: matches ${count} oneOf branches`);
  }
  return errors;
}

const catalog = new NodeCatalog();
const schema = treeJsonSchema(catalog) as Schema;

async function exampleTrees(): Promise<Array<[string, unknown]>> {
  const files = (await readdir(TREES)).filter((f) => /\.(json|ya?ml)$/.test(f) && f !== 'schema.json').toSorted();
  return Promise.all(
    files.map(async (f): Promise<[string, unknown]> => {
      const parsed = parseTreeText(await readFile(join(TREES, f), 'utf8'), f.endsWith('.json') ? 'json' : 'yaml');
      if (!parsed.ok) throw new Error(`${f}: ${parsed.message}`);
      return [f, parsed.value];
    }),
  );
}

describe('trees/schema.json', () => {
  it('is the generated schema (run `npx tsx src/tools/gen-schema.ts` after changing a node kind)', async () => {
    expect(await readFile(join(TREES, 'schema.json'), 'utf8')).toBe(formatTreeSchema(catalog));
  });

  it('is draft 2020-12 and uses only keywords the checker implements, with no dangling $ref', () => {
    expect((schema as Record<string, unknown>)['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    const objects = [...subschemas(schema)].filter((s) => typeof s !== 'boolean');
    expect(objects.flatMap((s) => Object.keys(s)).filter((k) => !KEYWORDS.has(k))).toEqual([]);
    const refs = objects.map((s) => s['$ref']).filter((r): r is string => typeof r === 'string');
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) expect(() => resolve(schema, ref)).not.toThrow();
  });

  it('has one schema per node kind, listing its parameters, descriptions and defaults', () => {
    const defs = (schema as { $defs: Record<string, { properties: Record<string, Record<string, unknown>>; required: string[]; description: string }> }).$defs;
    for (const kind of catalog.allKinds()) {
      const def = defs[`node.${kind.type}`]!;
      expect(def.description).toBe(kind.description);
      for (const [name, spec] of Object.entries(kind.params)) {
        expect({ param: `${kind.type}.${name}`, description: def.properties[name]?.['description'], default: def.properties[name]?.['default'] }).toEqual({
          param: `${kind.type}.${name}`,
          description: spec.description,
          default: spec.default,
        });
      }
      const required = Object.entries(kind.params).filter(([, spec]) => spec.required === true).map(([name]) => name);
      expect(def.required.filter((r) => r !== 'type' && r !== 'children' && r !== 'child')).toEqual(required);
      expect(Object.hasOwn(def.properties, 'children')).toBe(kind.category === 'composite');
      expect(Object.hasOwn(def.properties, 'child')).toBe(kind.category === 'decorator');
    }
    expect(defs['node.selector']!.properties['type']).toEqual({ enum: ['selector', 'fallback'] });
  });

  it('includes plugin node kinds and named services when the catalog has them', () => {
    const plugins = new NodeCatalog();
    registerPlugin(plugins, {
      name: 'cover',
      conditions: { inCover: { description: 'Is the agent in cover?', params: { margin: { type: 'number', min: 0, default: 1, description: 'Metres.' } }, test: () => true } },
      services: { scanCover: { description: 'Finds cover.', params: { radius: { type: 'number', required: true, description: 'Metres.' } }, run() {} } },
    });
    const withPlugins = treeJsonSchema(plugins) as Schema;
    const good = { root: { type: 'inCover', margin: 2, services: [{ every: 1, service: 'scanCover', radius: 10 }] } };
    expect(check(withPlugins, good, withPlugins)).toEqual([]);
    expect(check(schema, good, schema)).not.toEqual([]);
    expect(check(withPlugins, { root: { type: 'inCover', services: [{ every: 1, service: 'scanCover' }] } }, withPlugins)).not.toEqual([]);
  });
});

describe('the schema checks tree files', () => {
  it('accepts every example tree in trees/', async () => {
    const trees = await exampleTrees();
    expect(trees.length).toBeGreaterThanOrEqual(4);
    for (const [file, def] of trees) {
      expect({ file, problems: check(schema, def, schema) }).toEqual({ file, problems: [] });
      expect({ file, $schema: (def as Record<string, unknown>)['$schema'] }).toEqual({ file, $schema: './schema.json' });
    }
  });

  const ok = { type: 'succeed' };
  const rejected: Array<[string, unknown]> = [
    ['a misspelt field', { root: { type: 'sequence', chidren: [ok] } }],
    ['an unknown type', { root: { type: 'sequnce', children: [ok] } }],
    ['a decorator without child', { root: { type: 'inverter' } }],
    ['an empty children list', { root: { type: 'selector', children: [] } }],
    ['a missing required parameter', { root: { type: 'cooldown', child: ok } }],
    ['a parameter of the wrong type', { root: { type: 'wait', seconds: '2' } }],
    ['a number below its minimum', { root: { type: 'repeat', times: 0, child: ok } }],
    ['a bad enum value', { root: { type: 'log', message: "'x'", level: 'loud' } }],
    ['a forbidden blackboard key', { blackboard: { constructor: 1 }, root: ok }],
    ['a bad abort mode', { root: { type: 'succeed', if: 'true', abort: 'always' } }],
    ['a service running every 0 s', { root: { type: 'succeed', services: [{ every: 0, values: {} }] } }],
    ['a service with both values and service', { root: { type: 'succeed', services: [{ every: 1, values: {}, service: 'x' }] } }],
    ['a literal in set values', { blackboard: { n: 0 }, root: { type: 'set', values: { n: 3 } } }],
    ['an unknown top-level field', { root: ok, blackbaord: {} }],
    ['no root', { blackboard: {} }],
  ];
  for (const [what, def] of rejected) {
    it(`rejects ${what}, as validation does`, () => {
      expect(check(schema, def, schema)).not.toEqual([]);
      expect(validateTree('t', def, { catalog })).not.toEqual([]);
    });
  }

  it('accepts forever (-1) and [min, max] durations', () => {
    const def = { root: { type: 'repeat', times: -1, child: { type: 'wait', seconds: [1, 2] } } };
    expect(check(schema, def, schema)).toEqual([]);
    expect(check(schema, { root: { type: 'repeat', times: -2, child: ok } }, schema)).not.toEqual([]);
  });
});
