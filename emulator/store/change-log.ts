/**
 * `state.log`: the control state's changes since `state.json` was last
 * written whole, one JSON line per changed record (`{"c": collection, "id",
 * "v": record}`, no `v` for a deleted one) and the seeded generator's
 * position (`{"rp": n}`). A write appends what changed (fsync), so its cost
 * follows the change, not the size of the state; the store folds the log
 * into `state.json` when it grows past the state's own size, and at start.
 * Every line read back is parsed with its collection's schema (ids included),
 * never cast; a torn last line (a crash mid-append) is dropped and reported.
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { ControlState } from "./schema.js";
import type { EmulatorState } from "./state.js";
import { COLLECTIONS, type Collection } from "./tracked.js";

export const CHANGE_LOG = "state.log";

const LogLine = z.union([
  z.strictObject({ c: z.enum(COLLECTIONS), id: z.string(), v: z.unknown().optional() }),
  z.strictObject({ rp: z.number().int().min(0) }),
]);
type RecordLine = Extract<z.output<typeof LogLine>, { c: Collection }>;

/** Puts one record (or its deletion) into the plain state, checked as `state.json` checks its maps. */
function applyLine(state: EmulatorState, line: RecordLine): void {
  const put = <T>(map: Record<string, T>, parsed: Record<string, T>) => {
    if (line.v === undefined) delete map[line.id];
    else Object.assign(map, parsed);
  };
  const one = { [line.id]: line.v };
  const shape = ControlState.shape;
  switch (line.c) {
    case "organizations":
      put(state.organizations, line.v === undefined ? {} : shape.organizations.parse(one));
      return;
    case "credentials":
      put(state.credentials, line.v === undefined ? {} : shape.credentials.parse(one));
      return;
    case "keys":
      put(state.keys, line.v === undefined ? {} : shape.keys.parse(one));
      return;
    case "instances":
      put(state.instances, line.v === undefined ? {} : shape.instances.parse(one));
      return;
    case "billing":
      put(state.billing, line.v === undefined ? {} : shape.billing.parse(one));
      return;
    case "sandboxes":
      put(state.sandboxes, line.v === undefined ? {} : shape.sandboxes.parse(one));
      return;
  }
}

/**
 * Replays the log onto `state` (the plain one `state.json` gave). Resolves
 * with the log's size (0 when absent) and the last generator position in it.
 * A bad line that is not the last is an error naming its line: the state
 * after it cannot be trusted.
 */
export async function replayChangeLog(
  file: string,
  state: EmulatorState,
  report: (message: string) => void,
): Promise<{ bytes: number; randomPosition?: number }> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { bytes: 0 };
    throw error;
  }
  const lines = text.split("\n");
  const complete = text.endsWith("\n") ? lines.slice(0, -1) : lines;
  let randomPosition: number | undefined;
  for (const [index, raw] of complete.entries()) {
    const last = index === complete.length - 1;
    let line: z.output<typeof LogLine>;
    try {
      line = LogLine.parse(JSON.parse(raw));
      if ("rp" in line) randomPosition = line.rp;
      else applyLine(state, line);
    } catch (error) {
      if (last && !text.endsWith("\n")) {
        report(`${CHANGE_LOG}: the last line was cut short by a crash and is dropped (a change never acknowledged)`);
        break;
      }
      throw new Error(`${CHANGE_LOG} line ${index + 1}: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
    }
  }
  return { bytes: Buffer.byteLength(text), ...(randomPosition !== undefined ? { randomPosition } : {}) };
}

/** The lines for the changed records (their values now in `state`, or their deletion) and the generator's position. */
export function changeLines(state: EmulatorState, changed: ReadonlyMap<Collection, ReadonlySet<string>>, randomPosition: number | undefined): string {
  let out = "";
  for (const [collection, ids] of changed) {
    const map: Record<string, unknown> = state[collection];
    for (const id of ids) out += `${JSON.stringify(Object.hasOwn(map, id) ? { c: collection, id, v: map[id] } : { c: collection, id })}\n`;
  }
  if (randomPosition !== undefined) out += `${JSON.stringify({ rp: randomPosition })}\n`;
  return out;
}
