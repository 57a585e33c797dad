/**
 * Path safety: hostile paths on every file route (query, JSON body and
 * multipart field, source and destination of a move) are refused, and
 * nothing changes on disk, inside the instance root or outside it: the whole
 * data directory and a bait folder beside it are hashed before and after.
 */
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempPrefixOf } from "../../shared/durable-files.js";
import { CONVERSATIONS_DIR } from "../../emulator/store/conversation-log.js";
import { runningInstance, signupOrg, startEmulator, tempDir, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;
let org: TestOrg;
let id: string;
let base: string;
let root: string;
let removeBase: () => void;
const unique = `agent-bridge-pwned-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  const dir = tempDir("agent-bridge-paths-");
  base = dir.path;
  removeBase = dir.remove;
  t = await startEmulator({ dataDir: join(base, "data") });
  org = await signupOrg(t.app);
  id = (await runningInstance(t, org)).id;
  root = t.emulator.env.workspaces.rootOf(id);
  expect(root).toBe(join(base, "data", "instances", id));

  // Bait where each depth of `..` would land, and a folder the links point into.
  mkdirSync(join(base, "outside"));
  writeFileSync(join(base, "outside", "secret.txt"), "top secret");
  writeFileSync(join(base, "outside.txt"), "base bait");
  writeFileSync(join(base, "data", "outside.txt"), "data bait");
  writeFileSync(join(base, "data", "instances", "outside.txt"), "sibling bait");
  // Links inside the root that lead out of it, and one that stays inside.
  writeFileSync(join(root, "workspace", "victim.txt"), "victim");
  symlinkSync(join(base, "outside"), join(root, "workspace", "escape"));
  symlinkSync("../../../../outside", join(root, "workspace", "escape-rel"));
  symlinkSync(join(base, "outside", "secret.txt"), join(root, "workspace", "escape-file"));
  symlinkSync(join(base, "outside", "nowhere", "x"), join(root, "workspace", "dangling"));
  symlinkSync("escape", join(root, "workspace", "inner"));
  symlinkSync("../runtime.json", join(root, "workspace", "ok-link"));
});
afterAll(async () => {
  await t?.close();
  removeBase?.();
});

/**
 * Names, kinds, contents and link targets of everything under `dir`. What the
 * store owns is left out: state.json, its temporary files (a flush may be
 * under way while this runs), the conversation logs, the lock.
 */
function treeHash(dir: string): string {
  const hash = createHash("sha256");
  const walk = (abs: string, rel: string) => {
    for (const name of readdirSync(abs).sort()) {
      const path = `${rel}/${name}`;
      if (path === "/data/state.json" || path === "/data/emulator.lock" || path === `/data/${CONVERSATIONS_DIR}`) continue;
      if (rel === "/data" && name.startsWith(tempPrefixOf("state.json"))) continue;
      const full = join(abs, name);
      const stats = lstatSync(full);
      if (stats.isSymbolicLink()) hash.update(`L ${path} -> ${readlinkSync(full)}\n`);
      else if (stats.isDirectory()) {
        hash.update(`D ${path}\n`);
        walk(full, path);
      } else hash.update(`F ${path} ${createHash("sha256").update(readFileSync(full)).digest("hex")}\n`);
    }
  };
  walk(dir, "");
  return hash.digest("hex");
}

/** What the server receives (after express decoded the query once); built once the bait exists. */
const hostilePaths = (): { label: string; path: string; status?: number }[] => [
  { label: "parent", path: ".." },
  { label: "parent file", path: "../outside.txt" },
  { label: "two up", path: "../../outside.txt" },
  { label: "three up", path: "../../../outside.txt" },
  { label: "out of the temp dir", path: `../../../../${unique}` },
  { label: "down then up", path: "workspace/../../outside.txt" },
  { label: "dots and up", path: "workspace/./../../../outside/secret.txt" },
  { label: "absolute", path: "/etc/passwd" },
  { label: "absolute to the bait", path: join(base, "outside", "secret.txt") },
  { label: "backslash parent", path: "..\\outside.txt" },
  { label: "backslash inside", path: "workspace\\..\\..\\outside.txt" },
  { label: "NUL inside", path: "workspace/a\u0000b.txt" },
  { label: "NUL after a traversal", path: "../outside.txt\u0000.png" },
  { label: "symlink dir out", path: "workspace/escape/secret.txt" },
  { label: "the symlink itself", path: "workspace/escape" },
  { label: "new path below a symlink out", path: "workspace/escape/new-dir/new.txt" },
  { label: "relative symlink out", path: "workspace/escape-rel/secret.txt" },
  { label: "symlink to a file out", path: "workspace/escape-file" },
  { label: "dangling symlink", path: "workspace/dangling" },
  { label: "link to a link out", path: "workspace/inner/secret.txt" },
  { label: "component over 255 bytes", path: `workspace/${"a".repeat(256)}` },
  { label: "component over 255 bytes in UTF-8", path: `workspace/${"é".repeat(128)}` },
  { label: "path over 1024 characters", path: `workspace/${"x/".repeat(600)}`, status: 422 },
  { label: "fullwidth dots", path: "\uff0e\uff0e/outside.txt" },
  { label: "two-dot leader", path: "\u2025/outside.txt" },
  { label: "one-dot leaders", path: "workspace/\u2024\u2024/\u2024\u2024/outside.txt" },
  { label: "fullwidth solidus", path: "workspace\uff0f..\uff0f..\uff0foutside.txt" },
  { label: "RTL override", path: "workspace/\u202etxt.exe" },
  { label: "RTL mark", path: "workspace/\u200fname.txt" },
  { label: "zero-width space", path: "workspace/\u200b" },
  { label: "BOM", path: "\ufeff../outside.txt" },
  { label: "replacement characters (overlong UTF-8 dots)", path: "workspace/\ufffd\ufffd/outside.txt" },
  { label: "newline", path: "workspace/line\nbreak.txt" },
];

/** Raw query strings: decoded once by express into a hostile path. */
const ENCODED = [
  "%2e%2e%2foutside.txt",
  "%2E%2E/%2E%2E/outside.txt",
  "..%2F..%2Foutside.txt",
  "%2fetc%2fpasswd",
  "%c0%ae%c0%ae/outside.txt",
  "..%5coutside.txt",
  "workspace%00.txt",
  "workspace/%2e%2e/%2e%2e/outside.txt",
];

type Sender = (path: string) => request.Test;

const on = (suffix = "") => `/v1/instances/${id}/files${suffix}`;
const ROUTES: Record<string, Sender> = {
  list: (path) => request(t.app).get(on()).query({ path }).set(org.auth),
  read: (path) => request(t.app).get(on("/content")).query({ path }).set(org.auth),
  download: (path) => request(t.app).get(on("/download")).query({ path }).set(org.auth),
  mkdir: (path) => request(t.app).post(on("/mkdir")).query({ path }).set(org.auth),
  delete: (path) => request(t.app).delete(on()).query({ path }).set(org.auth),
  write: (path) => request(t.app).put(on("/content")).set(org.auth).send({ path, content: "pwned" }),
  "move source": (path) => request(t.app).post(on("/move")).set(org.auth).send({ source: path, destination: "workspace/stolen.txt" }),
  "move destination": (path) => request(t.app).post(on("/move")).set(org.auth).send({ source: "workspace/victim.txt", destination: path }),
  upload: (path) => request(t.app).post(on("/upload")).set(org.auth).field("path", path).attach("file", Buffer.from("pwned"), "p.txt"),
};

const RAW_ROUTES: Record<string, (raw: string) => request.Test> = {
  list: (raw) => request(t.app).get(`${on()}?path=${raw}`).set(org.auth),
  read: (raw) =>
    request(t.app)
      .get(`${on("/content")}?path=${raw}`)
      .set(org.auth),
  download: (raw) =>
    request(t.app)
      .get(`${on("/download")}?path=${raw}`)
      .set(org.auth),
  mkdir: (raw) =>
    request(t.app)
      .post(`${on("/mkdir")}?path=${raw}`)
      .set(org.auth),
  delete: (raw) => request(t.app).delete(`${on()}?path=${raw}`).set(org.auth),
};

describe("hostile paths", () => {
  it("has at least 20 hostile paths and 9 routes", () => {
    expect(hostilePaths().length).toBeGreaterThanOrEqual(20);
    expect(Object.keys(ROUTES)).toHaveLength(9);
  });

  it("refuses every hostile path on every file route, and nothing changes on disk", async () => {
    const before = treeHash(base);
    const wrong: string[] = [];
    for (const [route, send] of Object.entries(ROUTES)) {
      for (const hostile of hostilePaths()) {
        const res = await send(hostile.path);
        const want = hostile.status ?? 400;
        if (res.status !== want || res.body?.detail === undefined)
          wrong.push(`${route} / ${hostile.label}: ${res.status} ${String(res.text ?? "").slice(0, 120)}`);
      }
    }
    for (const [route, send] of Object.entries(RAW_ROUTES)) {
      for (const raw of ENCODED) {
        const res = await send(raw);
        if (res.status !== 400) wrong.push(`${route} / raw ${raw}: ${res.status} ${String(res.text ?? "").slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(treeHash(base)).toBe(before);
    expect(existsSync(join(tmpdir(), unique))).toBe(false);
    expect(readFileSync(join(base, "outside", "secret.txt"), "utf8")).toBe("top secret");
    expect(readdirSync(join(base, "outside"))).toEqual(["secret.txt"]);
  });

  it("says why in a sentence, without echoing the secret parts back", async () => {
    const escaped = await ROUTES.read!("../outside.txt");
    expect(escaped.body.detail).toBe("Path escapes the instance root.");
    const link = await ROUTES.read!("workspace/escape/secret.txt");
    expect(link.body.detail).toBe("Path goes through a symbolic link that points outside the instance root.");
    const absolute = await ROUTES.read!("/etc/passwd");
    expect(absolute.body.detail).toBe("Path must be relative to the instance root, not absolute.");
    const fullwidth = await ROUTES.read!("\uff0e\uff0e/x");
    expect(fullwidth.body.detail).toMatch(/read as '\.'/);
    const rtl = await ROUTES.read!("workspace/\u202etxt.exe");
    expect(rtl.body.detail).toMatch(/U\+202E/);
  });
});

describe("what is not hostile", () => {
  it("treats a double-encoded traversal as a literal name inside the root, never decoding it again", async () => {
    const read = await RAW_ROUTES.read!("%252e%252e%252foutside.txt");
    expect(read.status).toBe(404);
    expect(read.body.detail).toBe("Path not found: %2e%2e%2foutside.txt.");
    await RAW_ROUTES.mkdir!("%252e%252e/%252e%252e/made").expect(204);
    expect(lstatSync(join(root, "%2e%2e", "%2e%2e", "made")).isDirectory()).toBe(true);
    const listed = await RAW_ROUTES.list!("%252e%252e");
    expect(listed.body).toMatchObject({ path: "%2e%2e", entries: [{ name: "%2e%2e", path: "%2e%2e/%2e%2e", is_dir: true }] });
    expect(existsSync(join(base, "data", "instances", "made"))).toBe(false);
    await RAW_ROUTES.delete!("%252e%252e").expect(204);
  });

  it("follows a link that stays inside the root, and a '..' that stays inside", async () => {
    const viaLink = await ROUTES.read!("workspace/ok-link");
    expect(viaLink.status).toBe(200);
    expect(JSON.parse(viaLink.body.content as string)).toHaveProperty("channels");
    const dotted = await ROUTES.read!("workspace/../workspace/./victim.txt");
    expect(dotted.body).toEqual({ path: "workspace/victim.txt", content: "victim" });
  });

  it("accepts ordinary non-ASCII names", async () => {
    for (const name of ["workspace/日本語/ファイル.txt", "workspace/emoji 😀.txt", "workspace/Ünïcödé (1).md", "workspace/..hidden", "workspace/a..b"]) {
      await ROUTES.write!(name).expect(204);
      const res = await ROUTES.read!(name);
      expect(res.status, name).toBe(200);
      expect(res.body.content).toBe("pwned");
      await ROUTES.delete!(name).expect(204);
    }
  });
});
