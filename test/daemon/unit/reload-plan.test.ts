import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseConfig } from "../../../daemon/config/load.js";
import { configHash, keepRunning, LIVE, planReload, RELOAD_CLASSES, RESTART_ONLY, valueAt } from "../../../daemon/config/reload.js";
import { daemonConfigSchema, type DaemonConfigInput } from "../../../daemon/config/schema.js";

const TOKEN_A = "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const TOKEN_B = "123456:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

const config = (over: Partial<DaemonConfigInput> & { token?: string } = {}) => {
  const { token, ...rest } = over;
  return parseConfig(
    {
      service: { baseUrl: "http://127.0.0.1:1", apiKey: "svc_sk_0123456789abcdef" },
      routes: [{ instance: "i1" }],
      channels: [
        { type: "telegram", id: "tg", token: token ?? TOKEN_A, access: { users: ["1"] } },
        { type: "terminal", id: "term" },
      ],
      ...rest,
    },
    {},
  );
};

describe("planReload", () => {
  it("changes nothing for the same file, and its hash is the same", () => {
    expect(planReload(config(), config())).toEqual({ restartNeeded: [], restart: [], add: [], remove: [] });
    expect(configHash(config())).toBe(configHash(config()));
  });

  it("restarts only the channel whose credentials changed; access, streaming, resets and queue modes apply live", () => {
    const next = config({ token: TOKEN_B });
    expect(planReload(config(), next).restart).toEqual(["tg"]);
    expect(configHash(next)).not.toBe(configHash(config()));
    const live = config({
      channels: [
        {
          type: "telegram",
          id: "tg",
          token: TOKEN_A,
          access: { users: ["1", "2"] },
          streaming: "off",
          queue: { mode: "collect" },
          sessionReset: { idleMinutes: 5 },
        },
        { type: "terminal", id: "term" },
      ],
      routes: [{ instance: "i2", queue: { mode: "interrupt" } }],
    });
    expect(planReload(config(), live)).toEqual({ restartNeeded: [], restart: [], add: [], remove: [] });
  });

  it("starts new channels, stops removed or disabled ones, and names the parts that wait for a restart", () => {
    const next = config({
      service: { baseUrl: "http://127.0.0.1:2", apiKey: "svc_sk_0123456789abcdef" },
      ops: { port: 0 },
      channels: [
        { type: "telegram", id: "tg", token: TOKEN_A, access: { users: ["1"] }, enabled: false },
        { type: "terminal", id: "term" },
        { type: "telegram", id: "tg2", token: TOKEN_B },
      ],
    });
    expect(planReload(config(), next)).toEqual({ restartNeeded: ["service", "ops"], restart: [], add: ["tg2"], remove: ["tg"] });
  });
});

/** A schema's object shape under its defaults, optionals and transforms, or undefined when it is no object. */
function shapeOf(schema: z.core.$ZodType): Record<string, z.core.$ZodType> | undefined {
  if (schema instanceof z.ZodObject) return schema.shape;
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault || schema instanceof z.ZodOptional || schema instanceof z.ZodNullable)
    return shapeOf(schema.unwrap());
  if (schema instanceof z.ZodPipe) return shapeOf(schema.in);
  return undefined;
}

/** Every key of the schema that is neither classified itself nor an object whose every key is: the walk the classification must pass. */
function unclassified(schema: z.core.$ZodType, prefix = ""): string[] {
  return Object.entries(shapeOf(schema) ?? {}).flatMap(([key, value]) => {
    const path = `${prefix}${key}`;
    if (Object.hasOwn(RELOAD_CLASSES, path)) return [];
    return shapeOf(value) ? unclassified(value, `${path}.`) : [path];
  });
}

/** The dotted paths the schema has (objects walked into, everything else a leaf). */
function pathsOf(schema: z.core.$ZodType, prefix = ""): string[] {
  return Object.entries(shapeOf(schema) ?? {}).flatMap(([key, value]) => {
    const path = `${prefix}${key}`;
    return [path, ...(shapeOf(value) ? pathsOf(value, `${path}.`) : [])];
  });
}

describe("every key of the config is live or restart-only (RELOAD_CLASSES)", () => {
  it("classifies every key of the schema, walked from the schema itself", () => {
    expect(unclassified(daemonConfigSchema)).toEqual([]);
  });

  it("fails on a key added to the schema without a class", () => {
    const inner = daemonConfigSchema.in;
    const grown = inner.extend({ newSetting: z.boolean().default(false), queue: inner.shape.queue.unwrap().extend({ burst: z.number().optional() }) });
    expect(unclassified(grown)).toEqual(["queue.burst", "newSetting"]);
  });

  it("lists no key the schema does not have, and none twice (a section and a key of it)", () => {
    const known = new Set(pathsOf(daemonConfigSchema));
    const listed = Object.keys(RELOAD_CLASSES);
    expect(listed.filter((path) => !known.has(path))).toEqual([]);
    expect(listed.filter((path) => listed.some((other) => path.startsWith(`${other}.`)))).toEqual([]);
  });

  it("puts the new file in place but keeps the running value of every restart-only key", () => {
    const running = config();
    for (const path of [...RESTART_ONLY, ...LIVE]) {
      const next = structuredClone(config());
      const marker = { changed: path };
      setAt(next, path, marker);
      const applied = keepRunning(running, next);
      if (RESTART_ONLY.includes(path)) expect(valueAt(applied, path), path).toEqual(valueAt(running, path));
      else expect(valueAt(applied, path), path).toBe(marker);
    }
  });

  it("names every restart-only key that changed in the reload's answer", () => {
    for (const path of RESTART_ONLY) {
      const next = structuredClone(config());
      setAt(next, path, { changed: path });
      expect(planReload(config(), next).restartNeeded).toEqual([path]);
    }
    for (const path of LIVE) {
      const next = structuredClone(config());
      setAt(next, path, { changed: path });
      expect(planReload(config(), next).restartNeeded, path).toEqual([]);
    }
  });

  it("docs/bridge.md lists the same live and restart-only keys", () => {
    const doc = readFileSync(resolve(import.meta.dirname, "../../../docs/bridge.md"), "utf8");
    const listed = (label: string) => {
      const line = doc.split("\n").find((l) => l.startsWith(label));
      expect(line, label).toBeDefined();
      return [...(line ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]).sort();
    };
    expect(listed("- Live (from the next message):")).toEqual([...LIVE].sort());
    expect(listed("- Only at the next restart")).toEqual([...RESTART_ONLY].sort());
  });
});

/** Sets the value at a dotted path of a parsed config (a test's change to one key). */
function setAt(target: object, path: string, value: unknown): void {
  const parts = path.split(".");
  const last = parts.pop()!;
  let at: unknown = target;
  for (const part of parts) at = Reflect.get(Object(at), part);
  Reflect.set(Object(at), last, value);
}
