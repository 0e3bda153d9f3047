// The plugin API: actions, conditions and services written in TypeScript, registered by name as node
// types (or named services) with declared parameters that validation checks like built-in ones.

import { PluginError, type Agent } from './agent.js';
import type { NodeCatalog } from './catalog.js';
import type { ExprContext } from './expr/index.js';
import { defineNode, type NodeBuilder, type NodeKind, type ParamSpec } from './node.js';
import { Status, type TickStatus } from './status.js';

/** What plugin code sees of an agent: the expression roots, plus a writable blackboard (declared keys only). */
export interface PluginContext extends ExprContext {
  readonly bb: Record<string, unknown>;
}

/** Parameter values of one node: literals as written; 'expression' parameters evaluated for this call. */
export type PluginParams = Readonly<Record<string, unknown>>;

/** A condition leaf: success when `test` returns true, else failure. */
export interface ConditionPlugin {
  readonly description?: string;
  readonly params?: Readonly<Record<string, ParamSpec>>;
  test(ctx: PluginContext, params: PluginParams): boolean;
}

/** An action computed inside Canopy (not sent to the game): `tick` may return running over several ticks. */
export interface ActionPlugin {
  readonly description?: string;
  readonly params?: Readonly<Record<string, ParamSpec>>;
  /** `fresh` is true on entry. Keep per-agent progress in the blackboard so agent state stays portable. */
  tick(ctx: PluginContext, params: PluginParams, fresh: boolean): 'success' | 'failure' | 'running';
  /** Called when the action is halted while running. */
  halt?(ctx: PluginContext, params: PluginParams): void;
}

/** A named service (`{ "every": 1, "service": "scanCover" }`): runs at its cadence, writes blackboard keys. */
export interface ServicePlugin {
  readonly description?: string;
  readonly params?: Readonly<Record<string, ParamSpec>>;
  run(ctx: PluginContext, params: PluginParams): void;
}

/** A plugin module's default export. */
export interface CanopyPlugin {
  readonly name: string;
  readonly conditions?: Readonly<Record<string, ConditionPlugin>>;
  readonly actions?: Readonly<Record<string, ActionPlugin>>;
  readonly services?: Readonly<Record<string, ServicePlugin>>;
  /** Rarely needed: full node kinds (new composites or decorators) using the engine's own node API. */
  readonly nodes?: readonly NodeKind[];
}

/** Identity helper giving plugin authors types and completion. */
export function definePlugin(plugin: CanopyPlugin): CanopyPlugin {
  return plugin;
}

/** Registers everything a plugin provides; throws (at start-up, never at tick time) on a name clash. */
export function registerPlugin(catalog: NodeCatalog, plugin: CanopyPlugin): void {
  for (const [type, c] of Object.entries(plugin.conditions ?? {})) {
    catalog.register(
      defineNode({
        type,
        category: 'leaf',
        description: c.description ?? `Condition '${type}' from plugin '${plugin.name}'.`,
        params: c.params ?? {},
        build(b) {
          const params = paramReader(b, c.params ?? {});
          return {
            tick(a) {
              try {
                return c.test(a, params(a)) ? Status.SUCCESS : Status.FAILURE;
              } catch (err) {
                throw new PluginError(b.path, err);
              }
            },
          };
        },
      }),
    );
  }
  for (const [type, p] of Object.entries(plugin.actions ?? {})) {
    catalog.register(
      defineNode({
        type,
        category: 'leaf',
        description: p.description ?? `Action '${type}' from plugin '${plugin.name}'.`,
        params: p.params ?? {},
        build(b) {
          const params = paramReader(b, p.params ?? {});
          const halt = p.halt;
          return {
            tick(a, fresh): TickStatus {
              let s: string;
              try {
                s = p.tick(a, params(a), fresh);
              } catch (err) {
                throw new PluginError(b.path, err);
              }
              if (s === 'success') return Status.SUCCESS;
              if (s === 'failure') return Status.FAILURE;
              if (s === 'running') return Status.RUNNING;
              throw new PluginError(b.path, new Error(`returned ${JSON.stringify(s)}, not 'success', 'failure' or 'running'`));
            },
            onHalt:
              halt === undefined
                ? undefined
                : (a: Agent) => {
                    try {
                      halt(a, params(a));
                    } catch (err) {
                      throw new PluginError(b.path, err);
                    }
                  },
          };
        },
      }),
    );
  }
  for (const [name, s] of Object.entries(plugin.services ?? {})) {
    catalog.registerService({
      name,
      description: s.description ?? `Service '${name}' from plugin '${plugin.name}'.`,
      params: s.params ?? {},
      build(b) {
        const params = paramReader(b, s.params ?? {});
        return (a) => {
          try {
            s.run(a, params(a));
          } catch (err) {
            throw new PluginError(b.path, err);
          }
        };
      },
    });
  }
  for (const kind of plugin.nodes ?? []) catalog.register(kind);
}

/** Builds the params object per call; shared and frozen when no parameter is an expression. */
function paramReader(
  b: Pick<NodeBuilder, 'param' | 'expression'>,
  specs: Readonly<Record<string, ParamSpec>>,
): (a: Agent) => PluginParams {
  const literal: Record<string, unknown> = {};
  const dynamic: Array<[string, (a: Agent) => unknown]> = [];
  for (const [name, spec] of Object.entries(specs)) {
    const fn = spec.type === 'expression' ? b.expression(name) : null;
    if (fn !== null) dynamic.push([name, fn]);
    else literal[name] = b.param(name);
  }
  if (dynamic.length === 0) {
    const shared = Object.freeze(literal);
    return () => shared;
  }
  return (a) => {
    const out: Record<string, unknown> = { ...literal };
    for (const [name, fn] of dynamic) out[name] = fn(a);
    return out;
  };
}
