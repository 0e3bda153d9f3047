// BehaviorTree.CPP scripts (Script, ScriptCondition, `_failureIf`, `_onSuccess`, …) translated to Canopy
// expressions: a bare name is a blackboard key (`bb.name`); operators Canopy lacks are errors, never guesses.

/** A translated script: assignments in order (`key := expr`), or one expression. */
export type Statement = { readonly kind: 'assign'; readonly key: string; readonly expr: string } | { readonly kind: 'expr'; readonly expr: string };

export type ScriptResult = { readonly ok: true; readonly statements: readonly Statement[]; readonly keys: ReadonlySet<string> } | { readonly ok: false; readonly message: string };

interface Tok {
  readonly kind: 'num' | 'str' | 'name' | 'op';
  readonly text: string;
}

// Longest first, so `:=` is not read as `:` `=`.
const OPS = ['+=', '-=', '*=', '/=', ':=', '==', '!=', '<=', '>=', '&&', '||', '..', '(', ')', '<', '>', '!', '+', '-', '*', '/', '?', ':', '=', ';', '&', '|', '^', '~', ','];
const REFUSED: Readonly<Record<string, string>> = {
  '..': "the string concatenation '..' (BehaviorTree.CPP turns numbers into text first; Canopy's '+' joins two strings only): build the text in the game, or compare the parts",
  '&': "the bitwise operator '&'",
  '|': "the bitwise operator '|'",
  '^': "the bitwise operator '^'",
  '~': "the bitwise operator '~'",
  ',': "a ',' (scripts have no function calls)",
};
const ASSIGN = new Set([':=', '=', '+=', '-=', '*=', '/=']);

function lex(src: string): Tok[] | string {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const num = /^(0x[0-9a-fA-F]+|\d+(\.\d*)?([eE][-+]?\d+)?|\.\d+)/.exec(src.slice(i));
    if (num) {
      const text = num[0];
      out.push({ kind: 'num', text: text.startsWith('0x') ? String(Number.parseInt(text, 16)) : text });
      i += text.length;
      continue;
    }
    const name = /^@?[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (name) {
      out.push({ kind: 'name', text: name[0].replace(/^@/, '') });
      i += name[0].length;
      continue;
    }
    if (c === "'" || c === '"') {
      const end = src.indexOf(c, i + 1);
      if (end < 0) return `the text starting at column ${i + 1} has no closing ${c}`;
      out.push({ kind: 'str', text: src.slice(i + 1, end) });
      i = end + 1;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (op === undefined) return `unexpected character '${c}' at column ${i + 1}`;
    out.push({ kind: 'op', text: op });
    i += op.length;
  }
  return out;
}

/** Canopy text of an expression's tokens; collects the blackboard keys it reads. */
function expression(toks: readonly Tok[], keys: Set<string>): string {
  return toks
    .map((t) => {
      switch (t.kind) {
        case 'num':
          return t.text;
        case 'str':
          return `'${t.text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
        case 'name':
          if (t.text === 'true' || t.text === 'false') return t.text;
          keys.add(t.text);
          return `bb.${t.text}`;
        case 'op':
          return t.text;
      }
    })
    .join(' ');
}

/** Translates a BehaviorTree.CPP script (`a := 1; b += a`, or `hp < 30 && !busy`). */
export function translateScript(src: string): ScriptResult {
  const toks = lex(src);
  if (typeof toks === 'string') return { ok: false, message: toks };
  for (const t of toks) {
    if (t.kind === 'op' && REFUSED[t.text] !== undefined) return { ok: false, message: `Canopy expressions have no equivalent of ${REFUSED[t.text]}` };
  }
  const keys = new Set<string>();
  const statements: Statement[] = [];
  let start = 0;
  for (let k = 0; k <= toks.length; k++) {
    if (k < toks.length && !(toks[k]!.kind === 'op' && toks[k]!.text === ';')) continue;
    const part = toks.slice(start, k);
    start = k + 1;
    if (part.length === 0) continue;
    const [first, second] = part;
    if (first?.kind === 'name' && second?.kind === 'op' && ASSIGN.has(second.text)) {
      const rest = part.slice(2);
      if (rest.length === 0) return { ok: false, message: `nothing is assigned to '${first.text}'` };
      if (rest.some((t) => t.kind === 'op' && ASSIGN.has(t.text))) return { ok: false, message: 'only one assignment per statement is supported; separate them with ;' };
      keys.add(first.text);
      const value = expression(rest, keys);
      const expr = second.text === ':=' || second.text === '=' ? value : `bb.${first.text} ${second.text[0]} (${value})`;
      statements.push({ kind: 'assign', key: first.text, expr });
    } else {
      if (part.some((t) => t.kind === 'op' && ASSIGN.has(t.text))) return { ok: false, message: "an assignment must start with a blackboard key name ('key := value')" };
      statements.push({ kind: 'expr', expr: expression(part, keys) });
    }
  }
  if (statements.length === 0) return { ok: false, message: 'the script is empty' };
  return { ok: true, statements, keys };
}
