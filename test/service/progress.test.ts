// The stall watchdog's judgement (progress.ts), one thread playing both sides of the shared memory: a worker is
// stalled only when it owes work and its own step count has not moved, whatever the main thread's clock says.

import { describe, expect, test } from 'vitest';
import { ProgressBoard, ProgressWatch, newProgressBuffer } from '../../src/service/pool/progress.js';

function pair(): { board: ProgressBoard; watch: ProgressWatch } {
  const buffer = newProgressBuffer();
  return { board: new ProgressBoard(buffer), watch: new ProgressWatch(buffer) };
}

describe('ProgressWatch', () => {
  test('a worker that has posted its reply is healthy however late the main thread looks', () => {
    const { board, watch } = pair();
    watch.posting();
    expect(watch.stalledFor(0)).toBe(0);
    board.start();
    board.end();
    expect(watch.stalledFor(60_000)).toBe(0);
    expect(watch.stalledFor(3_600_000)).toBe(0);
  });

  test('a worker inside a handler that does not move is stalled from the last time it was seen moving', () => {
    const { board, watch } = pair();
    watch.posting();
    board.start();
    expect(watch.stalledFor(100)).toBe(0);
    expect(watch.stalledFor(400)).toBe(300);
    board.step(); // it moved (an agent ticked): not stalled
    expect(watch.stalledFor(500)).toBe(0);
    expect(watch.stalledFor(900)).toBe(400);
  });

  test('a message posted but never started (the worker is stuck outside any handler) counts as owed work', () => {
    const { board, watch } = pair();
    watch.posting();
    board.start();
    board.end();
    expect(watch.stalledFor(0)).toBe(0); // answered everything: idle, fine
    watch.posting();
    expect(watch.stalledFor(50)).toBe(50);
    expect(watch.stalledFor(1000)).toBe(1000);
  });
});
