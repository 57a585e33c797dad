/**
 * The long connection's frames, written and read by hand (not with the
 * SDK's own generated code, so the fake does not share the client's
 * mistakes): Feishu's `pbbp2.Frame` protobuf, as the SDK's schema and
 * Feishu's long-connection protocol define it —
 * 1 SeqID uint64, 2 LogID uint64, 3 service int32, 4 method int32
 * (0 control, 1 data), 5 headers (repeated Header: 1 key, 2 value),
 * 6 payloadEncoding, 7 payloadType, 8 payload bytes, 9 LogIDNew.
 */
export interface Frame {
  SeqID: number;
  LogID: number;
  service: number;
  method: number;
  headers: { key: string; value: string }[];
  payload?: Buffer;
}

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = BigInt(n);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Buffer.from(out);
}

const tag = (field: number, wire: number) => varint((field << 3) | wire);
const bytesField = (field: number, data: Buffer) => Buffer.concat([tag(field, 2), varint(data.length), data]);
const stringField = (field: number, s: string) => bytesField(field, Buffer.from(s, "utf8"));

export function encodeFrame(frame: Frame): Buffer {
  const parts = [tag(1, 0), varint(frame.SeqID), tag(2, 0), varint(frame.LogID), tag(3, 0), varint(frame.service), tag(4, 0), varint(frame.method)];
  for (const h of frame.headers) parts.push(bytesField(5, Buffer.concat([stringField(1, h.key), stringField(2, h.value)])));
  if (frame.payload) parts.push(bytesField(8, frame.payload));
  return Buffer.concat(parts);
}

/** Reads the fields of one message: number → values (varints as numbers, length-delimited as bytes). */
function fields(buf: Buffer): Map<number, (number | Buffer)[]> {
  const out = new Map<number, (number | Buffer)[]>();
  let at = 0;
  const readVarint = (): number => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[at++];
      if (byte === undefined) throw new Error("truncated frame");
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return Number(result);
      shift += 7n;
    }
  };
  while (at < buf.length) {
    const key = readVarint();
    const field = key >> 3;
    const wire = key & 7;
    let value: number | Buffer;
    if (wire === 0) value = readVarint();
    else if (wire === 2) {
      const len = readVarint();
      value = buf.subarray(at, at + len);
      at += len;
    } else throw new Error(`unexpected wire type ${wire}`);
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}

export function decodeFrame(buf: Buffer): Frame {
  const f = fields(buf);
  const num = (n: number) => {
    const v = f.get(n)?.[0];
    return typeof v === "number" ? v : 0;
  };
  const headers = (f.get(5) ?? []).flatMap((h) => {
    if (!Buffer.isBuffer(h)) return [];
    const hf = fields(h);
    const str = (n: number) => {
      const v = hf.get(n)?.[0];
      return Buffer.isBuffer(v) ? v.toString("utf8") : "";
    };
    return [{ key: str(1), value: str(2) }];
  });
  const payload = f.get(8)?.[0];
  return { SeqID: num(1), LogID: num(2), service: num(3), method: num(4), headers, ...(Buffer.isBuffer(payload) ? { payload: Buffer.from(payload) } : {}) };
}

export const headerOf = (frame: Frame, key: string): string | undefined => frame.headers.find((h) => h.key === key)?.value;
