/**
 * Audio files as Signal's clients send them, built byte by byte from the
 * containers' specifications (no encoder is installed here): an ADTS AAC
 * stream (ISO/IEC 14496-3 1.A.2, Android), AAC in an MPEG-4 file (ISO/IEC
 * 14496-12, iOS) and Ogg Opus (RFC 3533, RFC 7845). The payloads are filler:
 * only the containers' timing is real.
 */

/** An ADTS stream of `frames` frames at `rate` Hz, one raw data block (1024 samples) each, after an optional ID3v2 tag. */
export function adtsStream(frames: number, rate = 44_100, options: { id3?: boolean; payloadBytes?: number } = {}): Buffer {
  const rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];
  const index = rates.indexOf(rate);
  if (index < 0) throw new Error(`no ADTS rate ${rate}`);
  const payload = options.payloadBytes ?? 40;
  const length = 7 + payload;
  const frame = Buffer.alloc(length, 0x21);
  frame[0] = 0xff;
  frame[1] = 0xf1; // MPEG-4, layer 0, no CRC
  frame[2] = (1 << 6) | (index << 2); // AAC LC, the rate, channel config high bit 0
  frame[3] = (1 << 6) | ((length >> 11) & 0x03); // one channel
  frame[4] = (length >> 3) & 0xff;
  frame[5] = ((length & 0x07) << 5) | 0x1f;
  frame[6] = 0xfc; // buffer fullness, one raw data block
  const stream = Buffer.concat(Array.from({ length: frames }, () => frame));
  if (!options.id3) return stream;
  const tagBody = Buffer.alloc(20);
  const header = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, tagBody.length]);
  return Buffer.concat([header, tagBody, stream]);
}

const box = (type: string, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length);
  head.write(type, 4, "latin1");
  return Buffer.concat([head, body]);
};

/** A full box's timing (mvhd or mdhd), version 0 (32-bit times) or 1 (64-bit). */
function timingBox(type: "mvhd" | "mdhd", timescale: number, duration: number, version: 0 | 1): Buffer {
  const times = version === 1 ? Buffer.alloc(28) : Buffer.alloc(16);
  if (version === 1) {
    times.writeUInt32BE(timescale, 16);
    times.writeBigUInt64BE(BigInt(duration), 20);
  } else {
    times.writeUInt32BE(timescale, 8);
    times.writeUInt32BE(duration, 12);
  }
  const rest = Buffer.alloc(type === "mvhd" ? 80 : 4);
  return box(type, Buffer.from([version, 0, 0, 0]), times, rest);
}

/**
 * An M4A file: `ftyp`, `moov` (its `mvhd` with this timing, one audio track whose `mdhd` has the track's)
 * and `mdat`. `movieDuration` 0 is a fragmented file's movie header, which leaves the length to the tracks.
 */
export function m4aFile(options: {
  timescale: number;
  movieDuration: number;
  trackTimescale?: number;
  trackDuration?: number;
  version?: 0 | 1;
  moovLast?: boolean;
}): Buffer {
  const version = options.version ?? 0;
  const ftyp = box("ftyp", Buffer.from("M4A \0\0\0\0M4A mp42isom", "latin1"));
  const trak = box(
    "trak",
    box("tkhd", Buffer.alloc(84)),
    box(
      "mdia",
      timingBox("mdhd", options.trackTimescale ?? options.timescale, options.trackDuration ?? options.movieDuration, version),
      box("hdlr", Buffer.alloc(25)),
    ),
  );
  const moov = box("moov", timingBox("mvhd", options.timescale, options.movieDuration, version), trak);
  const mdat = box("mdat", Buffer.alloc(300, 0x5a));
  return options.moovLast ? Buffer.concat([ftyp, mdat, moov]) : Buffer.concat([ftyp, moov, mdat]);
}

/** One Ogg page (RFC 3533 §6); the CRC is left 0 (the length reader does not check it). */
function oggPage(serial: number, sequence: number, granule: bigint, packet: Buffer, headerType: number): Buffer {
  const lacing: number[] = [];
  let left = packet.length;
  while (left >= 255) {
    lacing.push(255);
    left -= 255;
  }
  lacing.push(left);
  const head = Buffer.alloc(27);
  head.write("OggS", 0, "latin1");
  head[5] = headerType;
  head.writeBigInt64LE(granule, 6);
  head.writeUInt32LE(serial, 14);
  head.writeUInt32LE(sequence, 18);
  head[26] = lacing.length;
  return Buffer.concat([head, Buffer.from(lacing), packet]);
}

/** An Ogg Opus file lasting `seconds` (granules at 48 kHz after `preSkip`), its audio over `pages` pages. */
export function oggOpusFile(seconds: number, options: { preSkip?: number; pages?: number; serial?: number } = {}): Buffer {
  const preSkip = options.preSkip ?? 312;
  const serial = options.serial ?? 0x1234abcd;
  const pages = options.pages ?? 4;
  const head = Buffer.alloc(19);
  head.write("OpusHead", 0, "latin1");
  head[8] = 1;
  head[9] = 1;
  head.writeUInt16LE(preSkip, 10);
  head.writeUInt32LE(48_000, 12);
  const tags = Buffer.concat([Buffer.from("OpusTags", "latin1"), Buffer.from([6, 0, 0, 0]), Buffer.from("signal"), Buffer.alloc(4)]);
  const total = Math.round(seconds * 48_000) + preSkip;
  const out = [oggPage(serial, 0, 0n, head, 0x02), oggPage(serial, 1, 0n, tags, 0)];
  for (let i = 1; i <= pages; i++) {
    const granule = BigInt(Math.round((total * i) / pages));
    out.push(oggPage(serial, i + 1, granule, Buffer.alloc(300, i), i === pages ? 0x04 : 0));
  }
  return Buffer.concat(out);
}
