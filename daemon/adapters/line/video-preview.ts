/**
 * The preview image LINE requires beside a video message (JPEG or PNG, at
 * most 1 MB): the bridge makes no thumbnails, so every video shows the same
 * small picture, a light play sign on dark grey, drawn here as a PNG (no image
 * library needed). Pure; made once.
 */
import { crc32, deflateSync } from "node:zlib";

const SIZE = 240;
const BACKGROUND = [0x2b, 0x2b, 0x2b] as const;
const SIGN = [0xf2, 0xf2, 0xf2] as const;

let made: Buffer | undefined;

export function videoPreviewPng(): Buffer {
  made ??= drawPng();
  return made;
}

/** Whether (x, y) lies in the play sign: a triangle pointing right, centred. */
function inSign(x: number, y: number): boolean {
  const left = 90;
  const right = 160;
  const half = 40;
  const mid = SIZE / 2;
  if (x < left || x > right) return false;
  // The triangle narrows from its full height at `left` to a point at `right`.
  const reach = half * (1 - (x - left) / (right - left));
  return Math.abs(y - mid) <= reach;
}

function drawPng(): Buffer {
  const row = 1 + SIZE * 3;
  const pixels = Buffer.alloc(row * SIZE);
  for (let y = 0; y < SIZE; y++) {
    // Filter type 0 (none) leads each row.
    pixels[y * row] = 0;
    for (let x = 0; x < SIZE; x++) {
      const colour = inSign(x, y) ? SIGN : BACKGROUND;
      pixels.set(colour, y * row + 1 + x * 3);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(SIZE, 0);
  header.writeUInt32BE(SIZE, 4);
  // Bit depth 8, colour type 2 (RGB), compression, filter and interlace 0.
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(pixels)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}
