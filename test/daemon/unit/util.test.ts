import { describe, expect, it } from "vitest";
import { BoundedMap } from "../../../shared/util/bounded-map.js";
import { formatBytes } from "../../../shared/util/format-bytes.js";
import { pathComponent, safeBaseName } from "../../../shared/util/names.js";
import { withoutUndefined } from "../../../shared/util/without-undefined.js";

describe("formatBytes", () => {
  it("prints binary units with one decimal and no trailing .0", () => {
    expect(formatBytes(8)).toBe("8 bytes");
    expect(formatBytes(1024)).toBe("1 KB");
    expect(formatBytes(1536)).toBe("1.5 KB");
    expect(formatBytes(20 * 1024 * 1024)).toBe("20 MB");
    expect(formatBytes(1.25 * 1024 * 1024)).toBe("1.3 MB");
  });
});

describe("BoundedMap", () => {
  it("forgets the least recently set key beyond its bound; setting again refreshes", () => {
    const m = new BoundedMap<string, number>(2);
    m.set("a", 1).set("b", 2).set("a", 3).set("c", 4);
    expect([...m.keys()]).toEqual(["a", "c"]);
    expect(m.get("a")).toBe(3);
  });

  it("refuses a bound that is not a positive whole number", () => {
    expect(() => new BoundedMap(0)).toThrow(/max must be a whole number >= 1, got 0/);
  });
});

describe("safeBaseName", () => {
  it("keeps the last path part without control characters or leading dots", () => {
    expect(safeBaseName("..\\..\\windows\\evil.exe")).toBe("evil.exe");
    expect(safeBaseName("../.hidden")).toBe("hidden");
    expect(safeBaseName("a\u0000b\u001f.txt")).toBe("ab.txt");
    expect(safeBaseName("Zoë's report.pdf")).toBe("Zoë's report.pdf");
  });

  it("is undefined when nothing usable is left, and bounded by max", () => {
    expect(safeBaseName("..")).toBeUndefined();
    expect(safeBaseName(null)).toBeUndefined();
    expect(safeBaseName("abcdef", { max: 3 })).toBe("abc");
  });
});

describe("pathComponent", () => {
  it("replaces runs outside [A-Za-z0-9._-] and a leading dot", () => {
    expect(pathComponent("a b/c..d")).toBe("a_b_c..d");
    expect(pathComponent(".env")).toBe("_env");
    expect(pathComponent("")).toBe("_");
    expect(pathComponent("", { fallback: "file" })).toBe("file");
  });

  it("keeps the chosen end when too long", () => {
    expect(pathComponent("abcdef.txt", { max: 5 })).toBe("abcde");
    expect(pathComponent("abcdef.txt", { max: 5, keep: "end" })).toBe("f.txt");
  });
});

describe("withoutUndefined", () => {
  it("leaves out the undefined properties and keeps every other value, null, 0, false and '' included", () => {
    const got = withoutUndefined({ a: undefined, b: null, c: 0, d: false, e: "", f: "x" });
    expect(got).toStrictEqual({ b: null, c: 0, d: false, e: "", f: "x" });
    expect("a" in got).toBe(false);
  });
});
