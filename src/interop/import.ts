// Importing a BehaviorTree.CPP v4 / Groot2 XML file: every <BehaviorTree> becomes a Canopy tree, validated by the
// engine like a tree file; every error carries the XML file, line and column and a sentence for the designer.

import { dirname, resolve } from 'node:path';
import { NodeCatalog, TreeLibrary, type TreeDefinition } from '../bt/index.js';
import { InteropErrorCode, type InteropError } from './errors.js';
import { CANOPY_TREE, convertNode, type ConvertContext, type NodeModel, type SubtreeCall } from './import-nodes.js';
import { checkSubtreeCalls } from './subtrees.js';
import { tidyNode } from './tidy.js';
import { readXml, type XmlElement } from './xml.js';

/** Imported trees, validated and compiled by the engine. */
export interface ImportedTrees {
  readonly ok: true;
  /** Tree name (BehaviorTree ID) → Canopy definition, ready to be written as a tree file. */
  readonly trees: Readonly<Record<string, TreeDefinition>>;
  /** `main_tree_to_execute`, or the first tree of the file itself (not of its includes). */
  readonly main: string;
  readonly library: TreeLibrary;
}

export type ImportResult = ImportedTrees | { readonly ok: false; readonly errors: readonly InteropError[] };

export interface ImportOptions {
  /** The file name used in errors and to resolve `<include path>` (default `input.xml`). */
  readonly file?: string;
  /** Node kinds the trees may use (plugins); default: the built-in catalog. */
  readonly catalog?: NodeCatalog;
  /** Reads an included file (absolute path); undefined when it cannot be read. Without it, `<include>` is an error. */
  readonly readFile?: (path: string) => string | undefined;
}

const TREE_TAG = '\u0000';

interface TreeElement {
  readonly el: XmlElement;
  readonly file: string;
}

/** Imports every BehaviorTree of an XML document (and its includes) as Canopy trees. */
export function importXml(text: string, opts: ImportOptions = {}): ImportResult {
  const file = opts.file ?? 'input.xml';
  const catalog = opts.catalog ?? new NodeCatalog();
  const errors: InteropError[] = [];
  const trees = new Map<string, TreeElement>();
  const models = new Map<string, NodeModel>();
  const top = readDocument(text, file, opts, { trees, models, errors, seen: new Set([resolve(file)]) });
  const main = top?.attrs['main_tree_to_execute'];
  if (top !== undefined && main !== undefined && errors.length === 0 && !trees.has(main)) {
    errors.push(at(file, top, undefined, InteropErrorCode.XML_SHAPE, `main_tree_to_execute="${main}" names no <BehaviorTree> of this file or its includes`));
  }
  if (errors.length > 0) return { ok: false, errors: sorted(errors) };

  const defs: Record<string, TreeDefinition> = {};
  const origins = new Map<string, { ctx: ConvertContext; root: object; el: XmlElement }>();
  const subtreePorts = new Map<string, Set<string>>();
  const subtreeCalls: SubtreeCall[] = [];
  const hidden = { count: 0 };
  const keysByTree = new Map<string, Set<string>>();
  const headers = new Map<string, TreeHeader>();
  for (const [name, t] of trees) {
    const nodes = t.el.children;
    if (nodes.length !== 1) {
      errors.push(at(t.file, t.el, name, InteropErrorCode.XML_SHAPE, `<BehaviorTree ID="${name}"> must hold exactly one root node, found ${nodes.length}`));
      continue;
    }
    const header = readHeader(nodes[0]!, t.file, name, errors);
    headers.set(name, header);
    const ctx: ConvertContext = {
      file: t.file,
      tree: name,
      catalog,
      models,
      treeIds: new Set(trees.keys()),
      keys: new Set(),
      subtreePorts,
      errors,
      origin: new WeakMap(),
      convert: (el) => convertNode(el, ctx),
      subtreeCalls,
      canopy: header.canopy,
      hidden,
    };
    if (header.root === undefined) continue;
    const root = convertNode(header.root, ctx);
    keysByTree.set(name, ctx.keys);
    origins.set(name, { ctx, root, el: t.el });
    defs[name] = { root } as TreeDefinition;
  }
  if (errors.length > 0) return { ok: false, errors: sorted(errors) };
  errors.push(...checkSubtreeCalls(subtreeCalls, keysByTree, subtreePorts, defs));
  if (errors.length > 0) return { ok: false, errors: sorted(errors) };

  // Blackboards: values written by Canopy's export, then every key the tree (or a caller, through ports) uses.
  for (const [name, t] of trees) {
    const header = headers.get(name)!;
    const blackboard: Record<string, unknown> = { ...header.blackboard };
    const keys = [...(keysByTree.get(name) ?? []), ...(subtreePorts.get(name) ?? [])].toSorted();
    for (const k of keys) if (!(k in blackboard)) blackboard[k] = null;
    const description = header.description ?? t.el.attrs['_description'];
    defs[name] = { ...(description ? { description } : {}), blackboard, root: tidyNode(defs[name]!.root) };
  }

  // Several trees share one file: tag the file name with the tree so each engine error finds its tree again.
  const files = Object.fromEntries([...trees].map(([n, t]) => [n, `${t.file}${TREE_TAG}${n}`]));
  const result = TreeLibrary.fromDefinitions(defs, { catalog, files });
  if (!result.ok) {
    return { ok: false, errors: result.errors.map((e) => {
      const [errorFile = e.file, tree = ''] = e.file.split(TREE_TAG);
      const o = origins.get(tree);
      const el = o ? elementAt(o.root, e.path, o.ctx.origin) ?? o.el : undefined;
      // Name the (translated) expression text: a designer who wrote a BehaviorTree.CPP script sees what Canopy read.
      const value = o && e.field ? valueAt(o.root, e.path, e.field) : undefined;
      const shown = typeof value === 'string' ? ` '${value}'` : '';
      const field = e.field ? ` (${e.field}${shown}${e.column !== undefined ? `, column ${e.column}` : ''})` : '';
      return {
        code: e.code,
        file: errorFile,
        ...(el ? { line: el.line, column: el.column } : {}),
        ...(o ? { tree: o.ctx.tree } : {}),
        message: `${el ? `<${el.tag}>` : 'tree'}${field}: ${e.message}`,
      };
    }) };
  }
  const names = Object.keys(defs);
  // Without main_tree_to_execute: the first tree of the file itself (included files come first in reading order).
  const own = names.find((n) => trees.get(n)!.file === file);
  const chosen = main ?? own ?? names[0]!;
  return { ok: true, trees: defs, main: chosen, library: result.library };
}

/** What a `<CanopyTree>` around a tree's root carries (Canopy's export writes one; BehaviorTree.CPP files have none). */
interface TreeHeader {
  readonly canopy: boolean;
  readonly root: XmlElement | undefined;
  readonly blackboard: Readonly<Record<string, unknown>>;
  readonly description: string | undefined;
}

/**
 * `<CanopyTree blackboard description>` holds a Canopy tree's declared blackboard (with initial values) and its
 * description. It is a node (not attributes of <BehaviorTree>) so that Groot2 keeps it, shows it, and lets a
 * designer edit the initial values.
 */
function readHeader(el: XmlElement, file: string, tree: string, errors: InteropError[]): TreeHeader {
  if (el.tag !== CANOPY_TREE) return { canopy: false, root: el, blackboard: {}, description: undefined };
  const bad = (message: string): TreeHeader => {
    errors.push(at(file, el, tree, InteropErrorCode.XML_SHAPE, `<${CANOPY_TREE}>: ${message}`));
    return { canopy: true, root: undefined, blackboard: {}, description: undefined };
  };
  if (el.children.length !== 1) return bad(`must hold exactly one root node, found ${el.children.length}`);
  const text = el.attrs['blackboard'] ?? '';
  let blackboard: unknown = {};
  if (text !== '') {
    try {
      blackboard = JSON.parse(text) as unknown;
    } catch {
      blackboard = null;
    }
  }
  if (blackboard === null || typeof blackboard !== 'object' || Array.isArray(blackboard)) {
    return bad("'blackboard' must be a JSON object of key → initial value, like {\"ammo\": 10}");
  }
  const description = el.attrs['description'];
  return { canopy: true, root: el.children[0], blackboard: blackboard as Record<string, unknown>, description: description === '' ? undefined : description };
}

interface Collect {
  readonly trees: Map<string, TreeElement>;
  readonly models: Map<string, NodeModel>;
  readonly errors: InteropError[];
  readonly seen: Set<string>;
}

/** Reads one document's trees, models and includes; returns its <root> element. */
function readDocument(text: string, file: string, opts: ImportOptions, c: Collect): XmlElement | undefined {
  const parsed = readXml(text);
  if (!parsed.ok) {
    c.errors.push({ code: InteropErrorCode.XML_PARSE, file, line: parsed.line, column: parsed.column, message: `the file is not valid XML: ${parsed.message}` });
    return undefined;
  }
  const root = parsed.elements[0];
  if (parsed.elements.length !== 1 || root?.tag !== 'root') {
    const el = root ?? { line: 1, column: 1 };
    c.errors.push({ code: InteropErrorCode.XML_SHAPE, file, line: el.line, column: el.column, message: 'a BehaviorTree.CPP file has one <root BTCPP_format="4"> element around its trees' });
    return undefined;
  }
  const format = root.attrs['BTCPP_format'];
  if (format !== undefined && format !== '4') {
    c.errors.push(at(file, root, undefined, InteropErrorCode.XML_UNSUPPORTED, `BTCPP_format="${format}": only version 4 is read; convert older files with BehaviorTree.CPP's convert_v3_to_v4 script or by saving them in Groot2`));
  }
  for (const el of root.children) {
    switch (el.tag) {
      case 'BehaviorTree': {
        const id = el.attrs['ID'];
        if (id === undefined || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(id)) {
          c.errors.push(at(file, el, undefined, InteropErrorCode.XML_SHAPE, `<BehaviorTree> needs an ID usable as a tree file name (letters, digits, '_', '-', '.'), found ${id === undefined ? 'none' : `'${id}'`}`));
        } else if (c.trees.has(id)) {
          c.errors.push(at(file, el, id, InteropErrorCode.XML_SHAPE, `a second <BehaviorTree ID="${id}">; tree IDs must be unique`));
        } else c.trees.set(id, { el, file });
        break;
      }
      case 'TreeNodesModel':
        readModels(el, file, c);
        break;
      case 'include':
        readInclude(el, file, opts, c);
        break;
      default:
        c.errors.push(at(file, el, undefined, InteropErrorCode.XML_SHAPE, `<${el.tag}> is not expected inside <root>: a file holds <BehaviorTree>, <TreeNodesModel> and <include> elements`));
    }
  }
  return root;
}

function readModels(models: XmlElement, file: string, c: Collect): void {
  for (const m of models.children) {
    if (!['Action', 'Condition', 'Control', 'Decorator', 'SubTree'].includes(m.tag)) {
      c.errors.push(at(file, m, undefined, InteropErrorCode.XML_SHAPE, `<${m.tag}> in <TreeNodesModel>: expected Action, Condition, Control, Decorator or SubTree`));
      continue;
    }
    const id = m.attrs['ID'];
    if (id === undefined) {
      c.errors.push(at(file, m, undefined, InteropErrorCode.XML_SHAPE, `<${m.tag}> in <TreeNodesModel> needs an ID`));
      continue;
    }
    const ports = new Map<string, string | undefined>();
    for (const p of m.children) {
      // Groot2 adds <MetadataFields> and the like; only ports matter here.
      if (!p.tag.endsWith('_port')) continue;
      const name = p.attrs['name'];
      if (name !== undefined) ports.set(name, p.attrs['default']);
    }
    c.models.set(id, { category: m.tag as NodeModel['category'], ports });
  }
}

function readInclude(el: XmlElement, file: string, opts: ImportOptions, c: Collect): void {
  const path = el.attrs['path'];
  if (el.attrs['ros_pkg'] !== undefined) {
    c.errors.push(at(file, el, undefined, InteropErrorCode.XML_INCLUDE, 'ros_pkg includes need ROS; give a path relative to this file'));
    return;
  }
  if (path === undefined || path === '') {
    c.errors.push(at(file, el, undefined, InteropErrorCode.XML_INCLUDE, "<include> needs a 'path'"));
    return;
  }
  const full = resolve(dirname(file), path);
  if (c.seen.has(full)) return; // included twice (or a cycle): its trees are already read
  c.seen.add(full);
  const text = opts.readFile?.(full);
  if (text === undefined) {
    c.errors.push(at(file, el, undefined, InteropErrorCode.XML_INCLUDE, `cannot read the included file '${path}'`));
    return;
  }
  readDocument(text, full, opts, c);
}

function at(file: string, el: XmlElement, tree: string | undefined, code: string, message: string): InteropError {
  return { code, file, line: el.line, column: el.column, ...(tree ? { tree } : {}), message };
}


/** The XML element of the deepest node on a JSON path (`root.children[1].child`) that came from one. */
function elementAt(root: object, path: string, origin: WeakMap<object, XmlElement>): XmlElement | undefined {
  let node: unknown = { root };
  let found = origin.get(root);
  for (const part of path.split('.').flatMap((p) => p.split(/[[\]]/).filter(Boolean))) {
    if (node === null || typeof node !== 'object') break;
    node = (node as Record<string, unknown>)[part];
    if (node !== null && typeof node === 'object') found = origin.get(node) ?? found;
  }
  return found;
}

/** The value of `field` (`expr`, `values.n`, `args.to`) of the node at `path`, to quote it in a message. */
function valueAt(root: object, path: string, field: string): unknown {
  let v: unknown = { root };
  for (const part of [...path.split('.'), ...field.split('.')].flatMap((p) => p.split(/[[\]]/).filter(Boolean))) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** Errors in file order: by file, then line and column (as a compiler lists them). */
function sorted(errors: readonly InteropError[]): InteropError[] {
  return errors.toSorted((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)));
}
