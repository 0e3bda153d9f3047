// A uniform bucket grid over the arena: nearest-neighbour look-ups in the 3×3 cells around a point,
// rebuilt every tick without allocating (heads and links in typed arrays).

/** Points 0..capacity-1 bucketed by cell; `nearest` finds the closest within `range` (≤ the cell size). */
export class Grid {
  private readonly cols: number;
  private readonly rows: number;
  private readonly head: Int32Array;
  private readonly next: Int32Array;

  constructor(width: number, height: number, private readonly cell: number, capacity: number) {
    this.cols = Math.max(1, Math.ceil(width / cell));
    this.rows = Math.max(1, Math.ceil(height / cell));
    this.head = new Int32Array(this.cols * this.rows).fill(-1);
    this.next = new Int32Array(capacity).fill(-1);
  }

  /** Empties every cell. */
  clear(): void {
    this.head.fill(-1);
  }

  /** Puts point `k` at (x, y). */
  add(k: number, x: number, y: number): void {
    const c = this.cellOf(x, y);
    this.next[k] = this.head[c]!;
    this.head[c] = k;
  }

  /** The point nearest to (px, py) within `range`, reading positions from xs/ys; -1 if none. */
  nearest(px: number, py: number, xs: Float64Array, ys: Float64Array, range: number): number {
    const cx = Math.min(this.cols - 1, Math.max(0, Math.floor(px / this.cell)));
    const cy = Math.min(this.rows - 1, Math.max(0, Math.floor(py / this.cell)));
    let best = -1;
    let bestD2 = range * range;
    for (let gy = Math.max(0, cy - 1); gy <= Math.min(this.rows - 1, cy + 1); gy++) {
      for (let gx = Math.max(0, cx - 1); gx <= Math.min(this.cols - 1, cx + 1); gx++) {
        for (let k = this.head[gy * this.cols + gx]!; k >= 0; k = this.next[k]!) {
          const dx = xs[k]! - px;
          const dy = ys[k]! - py;
          const d2 = dx * dx + dy * dy;
          if (d2 < bestD2) {
            bestD2 = d2;
            best = k;
          }
        }
      }
    }
    return best;
  }

  private cellOf(x: number, y: number): number {
    const cx = Math.min(this.cols - 1, Math.max(0, Math.floor(x / this.cell)));
    const cy = Math.min(this.rows - 1, Math.max(0, Math.floor(y / this.cell)));
    return cy * this.cols + cx;
  }
}
