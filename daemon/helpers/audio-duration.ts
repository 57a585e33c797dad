/**
 * An audio file's length in seconds, read from its container where the
 * platform does not say it (Teams sends a voice note as a plain file): WAV
 * (the `data` chunk's size over the `fmt ` chunk's byte rate), Ogg Opus and
 * Ogg Vorbis (the last page's granule position over the sample rate, less
 * Opus' pre-skip), and MP4/M4A (the `mvhd` box's duration over its time
 * scale). Pure, no I/O; undefined for anything else or anything malformed,
 * so a file whose length is not known is still passed on.
 */

export function audioSeconds(data: Buffer): number | undefined {
  try {
    const seconds = wav(data) ?? ogg(data) ?? mp4(data);
    return seconds !== undefined && Number.isFinite(seconds) && seconds >= 0 ? Math.round(seconds * 1000) / 1000 : undefined;
  } catch {
    // A truncated or odd file: its length is simply not known.
    return undefined;
  }
}

const ascii = (data: Buffer, at: number, length: number) => data.toString("latin1", at, at + length);

function wav(data: Buffer): number | undefined {
  if (ascii(data, 0, 4) !== "RIFF" || ascii(data, 8, 4) !== "WAVE") return undefined;
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= data.length; ) {
    const id = ascii(data, at, 4);
    const size = data.readUInt32LE(at + 4);
    if (id === "fmt ") byteRate = data.readUInt32LE(at + 16);
    // A stream still being written says 0 or 0xFFFFFFFF: the rest of the file is the data.
    if (id === "data" && byteRate) return Math.min(size, data.length - at - 8) / byteRate;
    at += 8 + size + (size % 2);
  }
  return undefined;
}

function ogg(data: Buffer): number | undefined {
  if (ascii(data, 0, 4) !== "OggS") return undefined;
  const segments = data.readUInt8(26);
  const packet = 27 + segments;
  let rate: number;
  let preSkip = 0;
  if (ascii(data, packet, 8) === "OpusHead") {
    // Opus' granule positions always count 48 kHz samples.
    rate = 48_000;
    preSkip = data.readUInt16LE(packet + 10);
  } else if (ascii(data, packet, 7) === "\u0001vorbis") {
    rate = data.readUInt32LE(packet + 12);
  } else return undefined;
  const last = data.lastIndexOf("OggS", data.length - 27, "latin1");
  if (last < 0 || !rate) return undefined;
  const granule = Number(data.readBigInt64LE(last + 6));
  return granule < 0 ? undefined : Math.max(0, granule - preSkip) / rate;
}

function mp4(data: Buffer): number | undefined {
  if (ascii(data, 4, 4) !== "ftyp") return undefined;
  const moov = box(data, 0, data.length, "moov");
  const mvhd = moov && box(data, moov.start, moov.end, "mvhd");
  if (!mvhd) return undefined;
  const version = data.readUInt8(mvhd.start);
  const scale = data.readUInt32BE(mvhd.start + (version === 1 ? 20 : 12));
  const duration = version === 1 ? Number(data.readBigUInt64BE(mvhd.start + 24)) : data.readUInt32BE(mvhd.start + 16);
  return scale ? duration / scale : undefined;
}

/** The contents of the first box of `type` between `from` and `to` (ISO/IEC 14496-12: 32-bit size, 1 = 64-bit size follows, 0 = to the end). */
function box(data: Buffer, from: number, to: number, type: string): { start: number; end: number } | undefined {
  for (let at = from; at + 8 <= to; ) {
    let size = data.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      size = Number(data.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = to - at;
    if (size < header) return undefined;
    if (ascii(data, at + 4, 4) === type) return { start: at + header, end: Math.min(at + size, to) };
    at += size;
  }
  return undefined;
}
