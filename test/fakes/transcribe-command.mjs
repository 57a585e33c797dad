#!/usr/bin/env node
// A local transcription program as the daemon runs one: given the audio file's path (its last
// argument), it prints the transcript and exits 0. What it "hears" is the file's text, with
// directives on the first line:
//   !exit N           fails with exit code N
//   !hang             writes its pid to the `--started FILE` file and never finishes
//   !hang-once        as !hang when that file does not exist yet; else hears the lines after it
//   !repeat N TEXT    prints TEXT N times
// `--log FILE` appends one line per run (how many times it was asked).
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const started = option("--started");
const log = option("--log");
if (log) appendFileSync(log, "run\n");
const file = args.at(-1);
const [first, ...rest] = readFileSync(file, "utf8").split("\n");
const hang = () => {
  if (started) writeFileSync(started, String(process.pid));
  setInterval(() => {}, 1 << 30);
};
const exit = /^!exit (\d+)$/.exec(first);
const repeat = /^!repeat (\d+) (.*)$/.exec(first);
if (exit) process.exit(Number(exit[1]));
else if (first === "!hang") hang();
else if (first === "!hang-once" && !(started && existsSync(started))) hang();
else if (first === "!hang-once") process.stdout.write(rest.join("\n"));
else process.stdout.write(repeat ? repeat[2].repeat(Number(repeat[1])) : [first, ...rest].join("\n"));
