#!/usr/bin/env node
// A local transcription program as the daemon runs one: given the audio file's path (its last
// argument), it prints the transcript and exits 0. What it "hears" is the file's text, with
// directives on the first line: `!exit N` fails with that code, `!hang` writes its pid to the
// file named by FAKE_TRANSCRIBE_STARTED and never finishes, `!repeat N TEXT` prints TEXT N times.
import { readFileSync, writeFileSync } from "node:fs";

const file = process.argv.at(-1);
const text = readFileSync(file, "utf8");
const [first, ...rest] = text.split("\n");
const exit = /^!exit (\d+)$/.exec(first);
if (exit) process.exit(Number(exit[1]));
if (first === "!hang") {
  if (process.env.FAKE_TRANSCRIBE_STARTED) writeFileSync(process.env.FAKE_TRANSCRIBE_STARTED, String(process.pid));
  setInterval(() => {}, 1 << 30);
} else {
  const repeat = /^!repeat (\d+) (.*)$/.exec(first);
  process.stdout.write(repeat ? repeat[2].repeat(Number(repeat[1])) : [first, ...rest].join("\n"));
}
