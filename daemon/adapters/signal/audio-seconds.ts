/**
 * How long an audio file plays, read from its container: PURE, no I/O.
 * signal-cli reports no duration for a voice note, so transcription's
 * `maxSeconds` is checked against what the file itself says. The formats
 * Signal's clients record: Android an ADTS AAC stream (`audio/aac`), iOS AAC
 * in an MPEG-4 (M4A) file, and Ogg Opus. Anything else, or a file too broken
 * to tell, is undefined (the core then transcribes within its byte limit).
 */

/** Seconds of audio in `data`, or undefined when its container is not one of the above or says nothing usable. */
export function audioSeconds(data: Buffer): number | undefined {
  if (data.length < 12) return undefined;
  if (data.toString("latin1", 4, 8) === "ftyp") return mp4Seconds(data);
  if (data.toString("latin1", 0, 4) === "OggS") return oggOpusSeconds(data);
  return adtsSeconds(data);
}

/** A box's type, where its content starts and where it ends (ISO/IEC 14496-12 §4.2: size 1 is a 64-bit size, 0 runs to the end). */
interface Box {
  type: string;
  body: number;
  end: number;
}

function* boxes(data: Buffer, start: number, end: number): Generator<Box> {
  let at = start;
  while (at + 8 <= end) {
    let size = data.readUInt32BE(at);
    const type = data.toString("latin1", at + 4, at + 8);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) return;
      const large = data.readBigUInt64BE(at + 8);
      if (large > BigInt(end - at)) return;
      size = Number(large);
      header = 16;
    } else if (size === 0) size = end - at;
    if (size < header || at + size > end) return;
    yield { type, body: at + header, end: at + size };
    at += size;
  }
}

const child = (data: Buffer, parent: Box, type: string): Box | undefined => {
  for (const box of boxes(data, parent.body, parent.end)) if (box.type === type) return box;
  return undefined;
};

/** A full box's timescale and duration (`mvhd` and `mdhd` share the layout): version 0 has 32-bit times, version 1 64-bit. */
function timing(data: Buffer, box: Box): number | undefined {
  const version = data[box.body];
  const at = box.body + 4;
  const [scaleAt, durationAt, durationBytes] = version === 1 ? [at + 16, at + 20, 8] : [at + 8, at + 12, 4];
  if (durationAt + durationBytes > box.end) return undefined;
  const timescale = data.readUInt32BE(scaleAt);
  const duration = durationBytes === 8 ? Number(data.readBigUInt64BE(durationAt)) : data.readUInt32BE(durationAt);
  // An unknown duration is all ones; a fragmented file says 0 in `mvhd`.
  if (timescale === 0 || duration === 0 || duration === 0xffffffff || duration >= Number.MAX_SAFE_INTEGER) return undefined;
  return duration / timescale;
}

function mp4Seconds(data: Buffer): number | undefined {
  const moov = [...boxes(data, 0, data.length)].find((b) => b.type === "moov");
  if (!moov) return undefined;
  const mvhd = child(data, moov, "mvhd");
  const whole = mvhd ? timing(data, mvhd) : undefined;
  if (whole !== undefined) return whole;
  // No movie duration: the longest track's media header.
  let longest: number | undefined;
  for (const trak of boxes(data, moov.body, moov.end)) {
    if (trak.type !== "trak") continue;
    const mdia = child(data, trak, "mdia");
    const mdhd = mdia ? child(data, mdia, "mdhd") : undefined;
    const seconds = mdhd ? timing(data, mdhd) : undefined;
    if (seconds !== undefined) longest = Math.max(longest ?? 0, seconds);
  }
  return longest;
}

/** Opus always counts granules at 48 kHz (RFC 7845 §4), whatever the input rate in `OpusHead`. */
const OPUS_RATE = 48_000;

function oggOpusSeconds(data: Buffer): number | undefined {
  // The first page's packet is the ID header: "OpusHead", version, channels, pre-skip (LE 16 bits).
  const segments = data[26];
  if (segments === undefined) return undefined;
  const first = 27 + segments;
  if (data.toString("latin1", first, first + 8) !== "OpusHead" || first + 12 > data.length) return undefined;
  const preSkip = data.readUInt16LE(first + 10);
  const serial = data.readUInt32LE(14);
  // The last page of the stream carries the final granule position (RFC 3533 §6); find it from the end.
  for (let at = data.lastIndexOf("OggS", data.length - 4, "latin1"); at >= 0; at = data.lastIndexOf("OggS", at - 1, "latin1")) {
    if (at + 27 > data.length || data.readUInt32LE(at + 14) !== serial) continue;
    const granule = data.readBigInt64LE(at + 6);
    // -1: no packet ends on this page.
    if (granule < 0n) continue;
    const samples = Number(granule) - preSkip;
    return samples > 0 ? samples / OPUS_RATE : undefined;
  }
  return undefined;
}

/** ADTS sampling_frequency_index (ISO/IEC 14496-3 Table 1.18). */
const ADTS_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];
/** AAC: 1024 samples per raw data block. */
const AAC_FRAME_SAMPLES = 1024;

function adtsSeconds(data: Buffer): number | undefined {
  let at = skipId3(data);
  let samples = 0;
  let rate: number | undefined;
  let frames = 0;
  while (at + 7 <= data.length) {
    // Syncword 0xFFF, layer 00.
    if (data[at] !== 0xff || ((data[at + 1] ?? 0) & 0xf6) !== 0xf0) break;
    const frameRate = ADTS_RATES[((data[at + 2] ?? 0) >> 2) & 0x0f];
    const length = (((data[at + 3] ?? 0) & 0x03) << 11) | ((data[at + 4] ?? 0) << 3) | ((data[at + 5] ?? 0) >> 5);
    if (frameRate === undefined || length < 7 || (rate !== undefined && frameRate !== rate)) break;
    rate = frameRate;
    samples += (((data[at + 6] ?? 0) & 0x03) + 1) * AAC_FRAME_SAMPLES;
    frames++;
    at += length;
  }
  // A file that is not ADTS at all stops at its first bytes; one frame could be chance.
  if (rate === undefined || frames < 2) return undefined;
  return samples / rate;
}

/** Past an ID3v2 tag, if the file starts with one (its size is four 7-bit bytes, plus a 10-byte header, plus a footer when flagged). */
function skipId3(data: Buffer): number {
  if (data.length < 10 || data.toString("latin1", 0, 3) !== "ID3") return 0;
  const size = (((data[6] ?? 0) & 0x7f) << 21) | (((data[7] ?? 0) & 0x7f) << 14) | (((data[8] ?? 0) & 0x7f) << 7) | ((data[9] ?? 0) & 0x7f);
  const footer = ((data[5] ?? 0) & 0x10) !== 0 ? 10 : 0;
  return 10 + size + footer;
}
