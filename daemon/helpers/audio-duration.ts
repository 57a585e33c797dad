/**
 * How long an audio file plays, read from its container: pure, no I/O. Where
 * a platform does not report a voice note's length (Signal, Teams) the
 * adapter reads it here, so transcription's `maxSeconds` applies; LINE's
 * audio messages need it as `duration`. The formats: WAV, Ogg Opus and Ogg
 * Vorbis, AAC or other audio in MPEG-4 (M4A/MP4, also fragmented or with
 * 64-bit sizes), and ADTS AAC streams (what Signal Android records). Anything
 * else, or a file too broken to tell, is undefined: its length is simply not
 * known and the file is still passed on.
 */

/** Seconds of audio in `data`, or undefined when its container is not one of the above or says nothing usable. */
export function audioSeconds(data: Buffer): number | undefined {
  try {
    const seconds = secondsByContainer(data);
    return seconds !== undefined && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
  } catch {
    // A truncated or odd file (a read past its end).
    return undefined;
  }
}

function secondsByContainer(data: Buffer): number | undefined {
  if (data.length < 12) return undefined;
  if (data.toString("latin1", 0, 4) === "RIFF" && data.toString("latin1", 8, 12) === "WAVE") return wavSeconds(data);
  if (data.toString("latin1", 4, 8) === "ftyp") return mp4Seconds(data);
  if (data.toString("latin1", 0, 4) === "OggS") return oggSeconds(data);
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

/**
 * Ogg Opus or Ogg Vorbis: the last page's granule position (RFC 3533 §6) over
 * the stream's sample rate, less Opus' pre-skip.
 */
function oggSeconds(data: Buffer): number | undefined {
  // The first page's packet is the ID header.
  const segments = data[26];
  if (segments === undefined) return undefined;
  const first = 27 + segments;
  const clock = oggClock(data, first);
  if (!clock) return undefined;
  const serial = data.readUInt32LE(14);
  // Find the stream's last page from the end.
  for (let at = data.lastIndexOf("OggS", data.length - 4, "latin1"); at >= 0; at = data.lastIndexOf("OggS", at - 1, "latin1")) {
    if (at + 27 > data.length || data.readUInt32LE(at + 14) !== serial) continue;
    const granule = data.readBigInt64LE(at + 6);
    // -1: no packet ends on this page.
    if (granule < 0n) continue;
    const samples = Number(granule) - clock.preSkip;
    return samples > 0 ? samples / clock.rate : undefined;
  }
  return undefined;
}

/** The ID header's sample rate and pre-skip: "OpusHead" (version, channels, pre-skip LE16) or "\x01vorbis" (version, channels, rate LE32). */
function oggClock(data: Buffer, at: number): { rate: number; preSkip: number } | undefined {
  if (data.toString("latin1", at, at + 8) === "OpusHead" && at + 12 <= data.length) return { rate: OPUS_RATE, preSkip: data.readUInt16LE(at + 10) };
  if (data.toString("latin1", at, at + 7) === "\u0001vorbis" && at + 16 <= data.length) {
    const rate = data.readUInt32LE(at + 12);
    return rate > 0 ? { rate, preSkip: 0 } : undefined;
  }
  return undefined;
}

/** WAV: the `data` chunk's size over the `fmt ` chunk's byte rate. */
function wavSeconds(data: Buffer): number | undefined {
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= data.length; ) {
    const id = data.toString("latin1", at, at + 4);
    const size = data.readUInt32LE(at + 4);
    if (id === "fmt " && at + 20 <= data.length) byteRate = data.readUInt32LE(at + 16);
    // A stream still being written says 0 or 0xFFFFFFFF: the rest of the file is the data.
    if (id === "data") return byteRate ? Math.min(size, data.length - at - 8) / byteRate : undefined;
    at += 8 + size + (size % 2);
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
