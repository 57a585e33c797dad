/**
 * A voice note's length read from its container (daemon/helpers/audio-duration.ts),
 * for platforms that do not say it (Teams): real files made by sox (WAV, Ogg
 * Vorbis) where it is installed, and containers laid out by hand after their
 * specifications (ISO/IEC 14496-12 for MP4, RFC 7845 for Ogg Opus, RIFF WAVE);
 * anything else or anything cut short is "not known", never an error.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { audioSeconds } from "../../../daemon/helpers/audio-duration.js";
import { wavFile } from "../../helpers/audio-containers.js";
import { lacks } from "../../helpers/system-programs.js";
import { tempDir } from "../daemon-harness.js";

const mp4Box = (type: string, ...content: Buffer[]) => {
  const body = Buffer.concat(content);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length, 0);
  head.write(type, 4, "latin1");
  return Buffer.concat([head, body]);
};

function mp4File(scale: number, duration: number, version: 0 | 1): Buffer {
  const mvhd = Buffer.alloc(version === 1 ? 112 : 100);
  mvhd.writeUInt8(version, 0);
  if (version === 1) {
    mvhd.writeUInt32BE(scale, 20);
    mvhd.writeBigUInt64BE(BigInt(duration), 24);
  } else {
    mvhd.writeUInt32BE(scale, 12);
    mvhd.writeUInt32BE(duration, 16);
  }
  return Buffer.concat([mp4Box("ftyp", Buffer.from("M4A \0\0\0\0isomM4A ", "latin1")), mp4Box("moov", mp4Box("mvhd", mvhd)), mp4Box("mdat", Buffer.alloc(64))]);
}

/** An Ogg page (CRC not filled: readers of lengths do not check it). */
function oggPage(granule: bigint, packet: Buffer, flags: number): Buffer {
  const head = Buffer.alloc(27);
  head.write("OggS", 0, "latin1");
  head.writeUInt8(flags, 5);
  head.writeBigInt64LE(granule, 6);
  head.writeUInt8(1, 26);
  return Buffer.concat([head, Buffer.from([packet.length]), packet]);
}

function opusFile(seconds: number, preSkip = 312): Buffer {
  const head = Buffer.alloc(19);
  head.write("OpusHead", 0, "latin1");
  head.writeUInt8(1, 8);
  head.writeUInt8(1, 9);
  head.writeUInt16LE(preSkip, 10);
  head.writeUInt32LE(16_000, 12); // the input's rate: not the granule's
  const tags = Buffer.from("OpusTags\0\0\0\0\0\0\0\0", "latin1");
  return Buffer.concat([oggPage(0n, head, 2), oggPage(0n, tags, 0), oggPage(BigInt(Math.round(seconds * 48_000) + preSkip), Buffer.alloc(40), 4)]);
}

describe("the length of an audio file, from its container", () => {
  it("reads WAV, MP4 (both mvhd versions) and Ogg Opus", () => {
    expect(audioSeconds(wavFile(2.5))).toBe(2.5);
    expect(audioSeconds(mp4File(44_100, 44_100 * 3, 0))).toBe(3);
    expect(audioSeconds(mp4File(1000, 61_250, 1))).toBe(61.25);
    expect(audioSeconds(opusFile(4.2))).toBe(4.2);
  });

  it.skipIf(lacks("speech", import.meta.url))("reads files sox made: WAV and Ogg Vorbis", () => {
    const dir = tempDir();
    try {
      for (const [name, seconds] of [
        ["tone.wav", 1.75],
        ["tone.ogg", 2.5],
      ] as const) {
        const path = join(dir.path, name);
        execFileSync("sox", ["-n", "-r", "16000", "-c", "1", path, "synth", String(seconds), "sine", "440"]);
        expect(audioSeconds(readFileSync(path))).toBeCloseTo(seconds, 2);
      }
    } finally {
      dir.remove();
    }
  });

  it("is not known for other files, nor for a file cut short", () => {
    expect(audioSeconds(Buffer.from("%PDF-1.7 not audio"))).toBeUndefined();
    expect(audioSeconds(Buffer.alloc(0))).toBeUndefined();
    expect(audioSeconds(wavFile(1).subarray(0, 30))).toBeUndefined();
    expect(audioSeconds(mp4File(1000, 5000, 0).subarray(0, 40))).toBeUndefined();
    expect(audioSeconds(opusFile(1).subarray(0, 20))).toBeUndefined();
  });
});
