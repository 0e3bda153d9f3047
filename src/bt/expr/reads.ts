// Which observation fields an expression reads: the `self.X` and `world.X` names it names statically,
// and whether it also reads those roots in a way no list can name (`self[k]`, `self` passed whole).

import { parse, type Expr } from './parser.js';

/** Observation roots whose fields are listed. */
export type ObservedRoot = 'self' | 'world';

/** The top-level fields of `self` and `world` read by some expressions. */
export interface ObservedFields {
  /** `self.X` (and `self['X']`) names, sorted. */
  readonly self: readonly string[];
  /** `world.X` names, sorted. */
  readonly world: readonly string[];
  /**
   * Roots also read dynamically (`self[k]` with a computed key, `self` as a whole value): for
   * these the list above may be incomplete.
   */
  readonly dynamic: readonly ObservedRoot[];
}

/** Accumulates the reads of many expressions (a tree's, its subtrees' and services' included). */
export class ObservedCollector {
  private readonly names = { self: new Set<string>(), world: new Set<string>() };
  private readonly dynamicRoots = new Set<ObservedRoot>();

  /** Adds the reads of one expression's source (a source that does not parse adds nothing). */
  add(source: string): void {
    const parsed = parse(source);
    if (parsed.ok) this.walk(parsed.ast);
  }

  /** The reads so far. */
  result(): ObservedFields {
    return {
      self: [...this.names.self].toSorted(),
      world: [...this.names.world].toSorted(),
      dynamic: (['self', 'world'] as const).filter((r) => this.dynamicRoots.has(r)),
    };
  }

  private walk(e: Expr): void {
    switch (e.kind) {
      case 'literal':
        return;
      case 'name':
        // A root used whole: anything in it may be read.
        if (e.name === 'self' || e.name === 'world') this.dynamicRoots.add(e.name);
        return;
      case 'member':
        if (e.object.kind === 'name' && (e.object.name === 'self' || e.object.name === 'world')) {
          this.names[e.object.name].add(e.name);
          return;
        }
        this.walk(e.object);
        return;
      case 'index':
        if (e.object.kind === 'name' && (e.object.name === 'self' || e.object.name === 'world')) {
          if (e.index.kind === 'literal' && (typeof e.index.value === 'string' || typeof e.index.value === 'number')) {
            this.names[e.object.name].add(String(e.index.value));
          } else {
            this.dynamicRoots.add(e.object.name);
            this.walk(e.index);
          }
          return;
        }
        this.walk(e.object);
        this.walk(e.index);
        return;
      case 'array':
        for (const item of e.items) this.walk(item);
        return;
      case 'call':
        for (const arg of e.args) this.walk(arg);
        return;
      case 'unary':
        this.walk(e.operand);
        return;
      case 'binary':
      case 'logical':
        this.walk(e.left);
        this.walk(e.right);
        return;
      case 'conditional':
        this.walk(e.test);
        this.walk(e.ifTrue);
        this.walk(e.ifFalse);
        return;
    }
  }
}
