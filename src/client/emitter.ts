// A small typed event emitter for the client SDK: one payload per event, unsubscribe functions,
// and promises for "the next such event" so callers (and tests) await events instead of sleeping.

/** Listener of an event carrying a `T`. */
export type Listener<T> = (payload: T) => void;

/**
 * Typed events. Listeners run synchronously in subscription order. A listener that throws does
 * not disturb the emitter or the other listeners: the error is rethrown from a microtask, where
 * it surfaces as an uncaught exception like any other bug.
 */
export class Emitter<Events extends { [K in keyof Events]: unknown }> {
  private readonly listeners = new Map<keyof Events, Listener<never>[]>();

  /** Calls `listener` on every `event` until the returned function is called. */
  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    const list = this.listeners.get(event);
    if (list === undefined) this.listeners.set(event, [listener]);
    else list.push(listener);
    return () => this.off(event, listener);
  }

  /** Calls `listener` on the next `event` only. */
  once<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    const off = this.on(event, (payload) => {
      off();
      listener(payload);
    });
    return off;
  }

  /** Removes a listener added with {@link on}; does nothing if it is not subscribed. */
  off<K extends keyof Events>(event: K, listener: Listener<Events[K]>): void {
    const list = this.listeners.get(event);
    if (list === undefined) return;
    const i = list.indexOf(listener as Listener<never>);
    if (i >= 0) list.splice(i, 1);
  }

  /**
   * Resolves with the payload of the next `event` for which `filter` (if given) returns true.
   * Rejects after `timeoutMs` when given.
   */
  next<K extends keyof Events>(
    event: K,
    filter?: (payload: Events[K]) => boolean,
    timeoutMs?: number,
  ): Promise<Events[K]> {
    return new Promise<Events[K]>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const off = this.on(event, (payload) => {
        if (filter !== undefined && !filter(payload)) return;
        off();
        if (timer !== undefined) clearTimeout(timer);
        resolve(payload);
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          off();
          reject(new Error(`no ${String(event)} event within ${timeoutMs} ms`));
        }, timeoutMs);
      }
    });
  }

  /** Number of listeners of `event`. */
  listenerCount(event: keyof Events): number {
    return this.listeners.get(event)?.length ?? 0;
  }

  /** Calls the listeners of `event` with `payload`. */
  protected emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const list = this.listeners.get(event);
    if (list === undefined || list.length === 0) return;
    // A copy: listeners may unsubscribe (once) while we iterate.
    for (const listener of list.slice()) {
      try {
        (listener as Listener<Events[K]>)(payload);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
