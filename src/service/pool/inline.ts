// InlinePool: the agents live on the calling thread, in one AgentHost that the router calls directly — the same
// host and router code as the worker pool, minus the threads. For tests and tiny deployments.

import type { Agent, AgentId } from '../../bt/index.js';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { AgentHost, type TreeLookup } from './host.js';
import { PoolRouter } from './router.js';
import type { PoolLogger } from './types.js';
import type { FromHost, HostRequest, ToHost, WorldUpdate } from './wire.js';

/** The pool without threads; see AgentPool. Build it with createAgentPool({ workers: 0 }). */
export class InlinePool extends PoolRouter {
  readonly workerCount = 0;
  private readonly host: AgentHost;
  private eluPrev: EventLoopUtilization | null = null;

  constructor(trees: TreeLookup, logger: PoolLogger | undefined) {
    super(trees, 1, logger);
    this.host = new AgentHost(trees);
  }

  ready(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * The live engine Agent of `id` (inline only: it lives on this thread), or null. For tools that replay on
   * this thread (recordings, the inspector); mutating it changes the session.
   */
  agentObject(session: string, id: AgentId): Agent | null {
    const at = this.locateAgent(session, id);
    return at === undefined ? null : this.host.agentAt(session, at.slot);
  }

  protected post(_host: number, msg: ToHost): void {
    this.host.handle(msg);
  }

  protected request(_host: number, msg: HostRequest): Promise<FromHost> {
    try {
      return Promise.resolve(this.host.handle(msg)!);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  protected shareWorld(world: unknown): WorldUpdate {
    return { value: world };
  }

  protected elu(): number {
    const now = performance.eventLoopUtilization();
    const since = this.eluPrev === null ? now : performance.eventLoopUtilization(now, this.eluPrev);
    this.eluPrev = now;
    return since.utilization;
  }
}
