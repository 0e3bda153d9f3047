// Port values: how a Canopy argument (expression or JSON literal) is written as an XML attribute and read back.
// `{key}` is a blackboard reference (BehaviorTree.CPP's own syntax), `=expr` a Canopy expression,
// JSON text (numbers, true/false/null, lists, objects) a literal, anything else a literal string.

import type { ParamSpec } from '../bt/index.js';

const BB_REF = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
const BB_EXPR = /^bb\.([A-Za-z_][A-Za-z0-9_]*)$/;
const QUOTED = /^'((?:[^'\\]|\\.)*)'$/;

/** A port value read back: the Canopy args value (a string is an expression) and the key it references, if any. */
export interface PortValue {
  readonly value: unknown;
  readonly key?: string;
}

/** Reads one port attribute as a Canopy args value. */
export function readPort(text: string): PortValue {
  const ref = BB_REF.exec(text);
  if (ref) return { value: `bb.${ref[1]}`, key: ref[1]! };
  if (text.startsWith('=')) return { value: text.slice(1) };
  const json = parseJson(text);
  if (json.ok && typeof json.value !== 'string') return { value: json.value };
  return { value: quote(text) };
}

/** Writes one Canopy args value (string = expression, else a literal) as a port attribute that `readPort` reads back identically. */
export function writePort(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value);
  const ref = BB_EXPR.exec(value);
  if (ref) return `{${ref[1]}}`;
  const lit = QUOTED.exec(value);
  if (lit) {
    const text = lit[1]!.replaceAll(/\\(.)/g, '$1');
    // An empty attribute means "not set" (Groot2 writes every declared port), so the empty string keeps the = form.
    if (text !== '' && readPort(text).value === quote(text) && quote(text) === value) return text;
  }
  return `=${value}`;
}

/** A Canopy string literal expression for `text`. */
export function quote(text: string): string {
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/** Writes a Canopy-specific node's parameter as an attribute, by its declared type. */
export function writeParam(spec: ParamSpec | undefined, value: unknown): string {
  if (typeof value === 'string' && (spec === undefined || spec.type === 'string' || spec.type === 'enum' || spec.type === 'expression')) return value;
  return JSON.stringify(value);
}

/** Reads a Canopy-specific node's parameter back; `undefined` with a reason when the text is not of the declared type. */
export function readParam(spec: ParamSpec | undefined, text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  const type = spec?.type;
  if (type === 'string' || type === 'enum' || type === 'expression') return { ok: true, value: text };
  const json = parseJson(text);
  if (json.ok) return { ok: true, value: json.value };
  if (type === undefined) return { ok: true, value: text };
  return { ok: false, message: `'${text}' is not a valid ${type === 'number' ? 'number' : type === 'boolean' ? 'true/false' : 'JSON value'}` };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}
