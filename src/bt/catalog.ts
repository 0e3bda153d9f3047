// The node catalog: every node kind and named service the engine knows, built-in or from plugins.
// Validation, the compiler and the JSON Schema generator all read kinds from here.

import type { NodeKind, ParamSpec } from './node.js';
import type { Agent } from './agent.js';
import type { CompiledExpr } from './expr/index.js';
import { BUILTIN_NODES } from './nodes/index.js';

/** What a named service gets while it is built for one node of one tree. */
export interface ServiceBuilder {
  readonly path: string;
  param<T>(name: string): T;
  expression(name: string): CompiledExpr | null;
}

/** A named service (`{ "every": 1, "service": "scanCover" }`), usually from a plugin. */
export interface ServiceKind {
  readonly name: string;
  readonly description: string;
  readonly params: Readonly<Record<string, ParamSpec>>;
  /** Returns the function run at the service's cadence; it writes blackboard keys, has no status. */
  readonly build: (b: ServiceBuilder) => (agent: Agent) => void;
}

/** A registry of node kinds (by type and alias) and named services. */
export class NodeCatalog {
  private readonly kinds = new Map<string, NodeKind>();
  private readonly serviceKinds = new Map<string, ServiceKind>();

  constructor(kinds: readonly NodeKind[] = BUILTIN_NODES) {
    for (const kind of kinds) this.register(kind);
  }

  /** Adds a node kind; throws if its type or an alias is taken (plugins cannot shadow built-ins). */
  register(kind: NodeKind): void {
    for (const name of [kind.type, ...(kind.aliases ?? [])]) {
      if (this.kinds.has(name)) throw new Error(`node type '${name}' is already registered`);
      if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name)) throw new Error(`node type '${name}' is not a valid name`);
    }
    for (const name of [kind.type, ...(kind.aliases ?? [])]) this.kinds.set(name, kind);
  }

  /** Adds a named service; throws if the name is taken. */
  registerService(service: ServiceKind): void {
    if (this.serviceKinds.has(service.name)) throw new Error(`service '${service.name}' is already registered`);
    this.serviceKinds.set(service.name, service);
  }

  /** The kind for a type or alias. */
  get(type: string): NodeKind | undefined {
    return this.kinds.get(type);
  }

  service(name: string): ServiceKind | undefined {
    return this.serviceKinds.get(name);
  }

  /** Every distinct kind, once (aliases folded). */
  allKinds(): NodeKind[] {
    return [...new Set(this.kinds.values())];
  }

  /** Every accepted type name, aliases included, sorted. */
  typeNames(): string[] {
    return [...this.kinds.keys()].toSorted();
  }

  serviceNames(): string[] {
    return [...this.serviceKinds.keys()].toSorted();
  }

  allServices(): ServiceKind[] {
    return [...this.serviceKinds.values()];
  }
}
