// An independent, deliberately plain MessagePack decoder for tests: it knows only the types of
// the MessagePack spec (and the timestamp extension), so anything msgpackr-specific fails here.

export class NotStandard extends Error {}

/** Decodes exactly one standard MessagePack value; throws NotStandard on anything else. */
export function referenceDecode(bytes: Uint8Array): unknown {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  const need = (n: number): void => {
    if (pos + n > bytes.length) throw new NotStandard(`truncated at ${pos}`);
  };
  const str = (n: number): string => {
    need(n);
    const s = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(pos, pos + n));
    pos += n;
    return s;
  };
  const arr = (n: number): unknown[] => {
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) out.push(read());
    return out;
  };
  const map = (n: number): Record<string, unknown> => {
    const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (let i = 0; i < n; i++) {
      const key = read();
      if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'bigint') throw new NotStandard('map key');
      out[String(key)] = read();
    }
    return { ...out };
  };
  const u8 = (): number => (need(1), bytes[pos++]!);
  const u16 = (): number => (need(2), (pos += 2), view.getUint16(pos - 2));
  const u32 = (): number => (need(4), (pos += 4), view.getUint32(pos - 4));
  function read(): unknown {
    const b = u8();
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if (b >= 0x80 && b <= 0x8f) return map(b & 0x0f);
    if (b >= 0x90 && b <= 0x9f) return arr(b & 0x0f);
    if (b >= 0xa0 && b <= 0xbf) return str(b & 0x1f);
    switch (b) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: { const n = u8(); need(n); pos += n; return bytes.slice(pos - n, pos); }
      case 0xc5: { const n = u16(); need(n); pos += n; return bytes.slice(pos - n, pos); }
      case 0xca: need(4); pos += 4; return view.getFloat32(pos - 4);
      case 0xcb: need(8); pos += 8; return view.getFloat64(pos - 8);
      case 0xcc: return u8();
      case 0xcd: return u16();
      case 0xce: return u32();
      case 0xcf: need(8); pos += 8; return view.getBigUint64(pos - 8);
      case 0xd0: need(1); pos += 1; return view.getInt8(pos - 1);
      case 0xd1: need(2); pos += 2; return view.getInt16(pos - 2);
      case 0xd2: need(4); pos += 4; return view.getInt32(pos - 4);
      case 0xd3: need(8); pos += 8; return view.getBigInt64(pos - 8);
      case 0xd6: { const type = view.getInt8(pos); need(5); pos += 5; if (type !== -1) throw new NotStandard(`ext ${type}`); return new Date(view.getUint32(pos - 4) * 1000); }
      case 0xd9: return str(u8());
      case 0xda: return str(u16());
      case 0xdb: return str(u32());
      case 0xdc: return arr(u16());
      case 0xdd: return arr(u32());
      case 0xde: return map(u16());
      case 0xdf: return map(u32());
      default: throw new NotStandard(`byte 0x${b.toString(16)} at ${pos - 1}`);
    }
  }
  const value = read();
  if (pos !== bytes.length) throw new NotStandard('trailing bytes');
  return value;
}
