// How the stall watchdog tells a stuck worker from a late main thread: each worker counts its own progress in
// shared memory (SharedArrayBuffer), and the main thread judges it by that count, never by how late replies are read.

/** Int32 slots of a progress board. */
const STARTED = 0; // messages the worker began handling
const DONE = 1; // messages it finished (reply posted, if any)
const STEPS = 2; // STARTED + DONE + agents ticked: moves whenever the worker does anything
const TICK_REQ = 3; // crash recovery: the tick order being run, and the slot of the agent being ticked (-1: none)
const AGENT_SLOT = 4;
const SLOTS = 5;

/**
 * The start value of a number field that later holds fractions (times, sums of ms). V8 keeps a field that starts
 * as a small integer (0) as an integer field; the first fraction stored turns it into a double field, which
 * deprecates the object's hidden class — and every optimized function that embeds the object (this watch and the
 * recovery journal are reached from `PoolRouter.spawn`, `despawn` and `tick` through `post`) is thrown away as
 * "dependent prototype chain changed". That happened when the first game servers' sessions arrived (the watchdog's
 * first look, the first checkpoint), right after the warm-up had optimized them. -0 is a double: no change later.
 */
export const DOUBLE_FIELD_START = -0;

/** A fresh board for one worker: pass `buffer` in workerData, keep a ProgressWatch on the main thread. */
export function newProgressBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
}

/**
 * The worker's side: `start()` before handling a message, `step()` per agent ticked, `end()` once the reply is
 * posted. Plain stores for `step` (one writer; the watchdog only needs to see that the number moves).
 */
export class ProgressBoard {
  private readonly cells: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.cells = new Int32Array(buffer);
  }

  start(): void {
    Atomics.add(this.cells, STARTED, 1);
    Atomics.add(this.cells, STEPS, 1);
  }

  step(): void {
    this.cells[STEPS]! += 1;
  }

  /** Tick order `req` starts ticking its agents (`agent` names each; `ticked` ends it). */
  ticking(req: number): void {
    this.cells[TICK_REQ] = req;
  }

  /** The agent in `slot` is about to tick: recovery reads it if this agent's plugin kills the worker; the step moves. */
  agent(slot: number): void {
    this.cells[AGENT_SLOT] = slot;
    this.cells[STEPS]! += 1;
  }

  /** The tick order's agents are done. */
  ticked(): void {
    this.cells[AGENT_SLOT] = -1;
  }

  end(): void {
    Atomics.add(this.cells, DONE, 1);
    Atomics.add(this.cells, STEPS, 1);
  }
}

/**
 * The main thread's side for one worker. A worker is stalled when it owes work (it is inside a handler, or a
 * message posted to it has not been started) and its step count has not moved for `stallMs`, counted from the
 * last time the watchdog saw it move. A main thread blocked for longer than `stallMs` sees, on its next check,
 * that the worker moved meanwhile (or owes nothing: its replies wait to be read), so it kills nobody; a worker
 * in a plugin's endless loop never moves and is caught one stallMs after its last step.
 */
export class ProgressWatch {
  private readonly cells: Int32Array;
  /** Messages posted to the worker (every postMessage, requests or not). */
  private posted = 0;
  private lastSteps = -1;
  /** A performance.now(): -0, not 0, so the field is a double from the start (DOUBLE_FIELD_START says why). */
  private lastMoved = DOUBLE_FIELD_START;

  constructor(buffer: SharedArrayBuffer) {
    this.cells = new Int32Array(buffer);
  }

  /**
   * The agent the worker was ticking when it stopped: the tick order's request id and the agent's slot, or null
   * (it died elsewhere). Read once the worker is gone (its plain stores are visible after it exits or stalls).
   */
  agentAtDeath(): { req: number; slot: number } | null {
    const slot = Atomics.load(this.cells, AGENT_SLOT);
    return slot < 0 ? null : { req: Atomics.load(this.cells, TICK_REQ), slot };
  }

  /** Call on every postMessage to the worker. */
  posting(): void {
    this.posted++;
  }

  /** Ms the worker has owed work without moving, as of `now` (performance.now() of this thread); 0 if healthy. */
  stalledFor(now: number): number {
    const steps = Atomics.load(this.cells, STEPS);
    const started = Atomics.load(this.cells, STARTED);
    const done = Atomics.load(this.cells, DONE);
    const owes = started !== done || started < this.posted;
    if (steps !== this.lastSteps || !owes) {
      this.lastSteps = steps;
      this.lastMoved = now;
      return 0;
    }
    return now - this.lastMoved;
  }
}
