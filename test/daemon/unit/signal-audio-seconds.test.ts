/**
 * A Signal voice note's length read from its container (signal-cli reports
 * none): ADTS AAC (Android), AAC in M4A (iOS), Ogg Opus; anything else, or a
 * broken file, is no length rather than a wrong one or a throw.
 */
import { describe, expect, it } from "vitest";
import { audioSeconds } from "../../../daemon/adapters/signal/audio-seconds.js";
import { seededRandom } from "../../../shared/random.js";
import { adtsStream, m4aFile, oggOpusFile } from "../../helpers/audio-containers.js";

describe("audioSeconds", () => {
  it("ADTS AAC: frames times 1024 samples over the stream's rate, after an ID3 tag too", () => {
    expect(audioSeconds(adtsStream(431, 44_100))).toBeCloseTo((431 * 1024) / 44_100, 6);
    expect(audioSeconds(adtsStream(375, 48_000, { id3: true }))).toBeCloseTo(8, 6);
    // Signal Android records at 44.1 kHz, but a 16 kHz stream is read by its own rate.
    expect(audioSeconds(adtsStream(1000, 16_000))).toBeCloseTo(64, 6);
  });

  it("M4A: the movie header's duration over its timescale, 32- and 64-bit; a fragmented file's from its track", () => {
    expect(audioSeconds(m4aFile({ timescale: 1000, movieDuration: 12_345 }))).toBeCloseTo(12.345, 6);
    expect(audioSeconds(m4aFile({ timescale: 44_100, movieDuration: 44_100 * 95, version: 1 }))).toBeCloseTo(95, 6);
    expect(audioSeconds(m4aFile({ timescale: 600, movieDuration: 1800, moovLast: true }))).toBeCloseTo(3, 6);
    expect(audioSeconds(m4aFile({ timescale: 1000, movieDuration: 0, trackTimescale: 44_100, trackDuration: 44_100 * 7 }))).toBeCloseTo(7, 6);
  });

  it("Ogg Opus: the last page's granule position less the pre-skip, at 48 kHz", () => {
    expect(audioSeconds(oggOpusFile(4.5))).toBeCloseTo(4.5, 4);
    expect(audioSeconds(oggOpusFile(181, { preSkip: 3840, pages: 9 }))).toBeCloseTo(181, 4);
  });

  it("anything else, or too little of a file, is no length", () => {
    expect(audioSeconds(Buffer.from("remind me to water the plants"))).toBeUndefined();
    expect(audioSeconds(Buffer.alloc(0))).toBeUndefined();
    // One ADTS-looking frame could be chance.
    expect(audioSeconds(adtsStream(1))).toBeUndefined();
    // An M4A cut before its moov, an Ogg stream that is not Opus.
    const m4a = m4aFile({ timescale: 1000, movieDuration: 5000, moovLast: true });
    expect(audioSeconds(m4a.subarray(0, m4a.length - 40))).toBeUndefined();
    const vorbis = oggOpusFile(3);
    vorbis.write("OpusHeaX", 28, "latin1");
    expect(audioSeconds(vorbis)).toBeUndefined();
  });

  it("never throws on damaged files: truncated and bit-flipped copies of each format give a number or nothing", () => {
    const random = seededRandom("audio-seconds");
    const samples = [adtsStream(50), m4aFile({ timescale: 1000, movieDuration: 2000 }), oggOpusFile(2)];
    for (const sample of samples) {
      for (let i = 0; i < 300; i++) {
        const copy = Buffer.from(sample.subarray(0, Math.floor(random.float() * sample.length) + 1));
        for (let flips = 0; flips < 3; flips++) copy[Math.floor(random.float() * copy.length)] = Math.floor(random.float() * 256);
        const seconds = audioSeconds(copy);
        if (seconds !== undefined) expect(Number.isFinite(seconds) && seconds > 0).toBe(true);
      }
    }
  });
});
