// `--watch N`: inspector pages the load generator opens alongside the game servers, as a developer would.
// Each page subscribes to a session and watches one agent over /v1/inspector/ws (docs/inspector.md), then
// only reads what the service pushes, so a run with and one without them give the capacity cost of watching.

import { WebSocket, type RawData } from 'ws';

/** A page's view of the stream: the messages this generator sends and the ones it waits for. */
type Pushed = { t: string; message?: string };

/** Watched agents spread over the sessions, round robin: agent ids are 0..n-1 in every session. */
export function watchPlan(sessions: readonly string[], agentsPerSession: readonly number[], n: number): Array<{ session: string; agent: number }> {
  const plan: Array<{ session: string; agent: number }> = [];
  for (let k = 0; plan.length < n; k++) {
    const s = k % sessions.length;
    const agent = Math.floor(k / sessions.length);
    if (agent >= agentsPerSession[s]!) {
      if (agentsPerSession.every((count) => count <= agent)) break;
      continue;
    }
    plan.push({ session: sessions[s]!, agent });
  }
  return plan;
}

/** The open pages; count what they receive, close them at the end of the run. */
export class InspectorPages {
  /** Messages and bytes pushed to all pages since they started watching. */
  messages = 0;
  bytes = 0;
  private readonly sockets: WebSocket[] = [];

  private constructor() {}

  /**
   * Opens one page per entry of `plan` on `httpUrl` and resolves once every page watches its agent.
   * Rejects with the service's reason when a page is refused (no inspector, unknown agent, bad key).
   */
  static async open(httpUrl: string, apiKey: string | undefined, plan: ReadonlyArray<{ session: string; agent: number }>, timeoutMs = 30_000): Promise<InspectorPages> {
    const pages = new InspectorPages();
    const url = `${httpUrl.replace(/^http/, 'ws')}/v1/inspector/ws`;
    try {
      await Promise.all(plan.map((p) => pages.watch(url, apiKey, p.session, p.agent, timeoutMs)));
    } catch (err) {
      pages.close();
      throw err;
    }
    return pages;
  }

  private watch(url: string, apiKey: string | undefined, session: string, agent: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const socket = new WebSocket(url, apiKey === undefined ? {} : { headers: { authorization: `Bearer ${apiKey}` } });
      this.sockets.push(socket);
      let watching = false;
      const timer = setTimeout(() => fail(new Error(`inspector page: not watching agent ${agent} of ${session} after ${timeoutMs / 1000} s`)), timeoutMs);
      const fail = (err: Error): void => {
        clearTimeout(timer);
        if (!watching) reject(err);
      };
      socket.on('error', (err) => fail(err));
      socket.on('close', (code) => fail(new Error(`inspector page closed (${code}) before watching agent ${agent} of ${session}`)));
      socket.on('open', () => {
        socket.send(JSON.stringify({ t: 'session', session }));
        socket.send(JSON.stringify({ t: 'watch', agent }));
      });
      socket.on('message', (data: RawData) => {
        const text = String(data);
        if (watching) {
          this.messages++;
          this.bytes += text.length;
          return;
        }
        const msg = JSON.parse(text) as Pushed;
        if (msg.t === 'error') fail(new Error(`inspector page: ${msg.message ?? 'refused'}`));
        else if (msg.t === 'watching') {
          watching = true;
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }

  close(): void {
    for (const s of this.sockets) s.terminate();
  }
}
