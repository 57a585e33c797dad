/**
 * The file links a channel serves on its own endpoint (daemon/adapters/file-links/),
 * over real HTTP on the shared endpoint (webhook.ts `routes`): a published file
 * is served whole, by range and to HEAD with its type and name; a wrong, unknown
 * or expired token is 404 and nothing under the path is listable; the links
 * outlive a restart until they expire; the same purpose and bytes give the same
 * link; disk is bounded; expired files are deleted.
 */
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { type IncomingMessage, request } from "node:http";
import { join } from "node:path";
import pino from "pino";
import { expect, it } from "vitest";
import { createFileLinks, type FileLinks, purposeOf } from "../../../daemon/adapters/file-links/index.js";
import { fileLinksSchema } from "../../../daemon/adapters/file-links/config.js";
import { fileRoute } from "../../../daemon/adapters/file-links/route.js";
import { FileLinkStore } from "../../../daemon/adapters/file-links/store.js";
import { listenWebhook, textAnswer, type WebhookEndpoint } from "../../../daemon/adapters/webhook.js";
import type { OutboundFile } from "../../../daemon/vocabulary/adapter.js";
import type { FileStore } from "../../../daemon/vocabulary/file-store.js";
import { createManualClock, type ManualClock } from "../../../shared/clock.js";
import { tempDir } from "../../helpers/emulator.js";
import { forThisTest } from "../../helpers/for-this-test.js";

const BASE = "https://bot.example.com/line/files";
const HOUR = 60 * 60 * 1000;
const log = pino({ level: "silent" });

const file = (fileName: string, data: Buffer, mimeType = "application/pdf", kind: OutboundFile["kind"] = "document"): OutboundFile => ({
  path: `out/${fileName}`,
  fileName,
  mimeType,
  kind,
  data,
});

/** A temporary folder, removed when the test finishes (after what was made in it). */
function folder(): string {
  const made = tempDir();
  forThisTest({ close: made.remove });
  return made.path;
}

interface Rig {
  links: FileLinks;
  endpoint: WebhookEndpoint;
  dir: string;
  /** The https URL as the reverse proxy in front of the endpoint forwards it. */
  local(url: string): string;
}

async function rig(clock: ManualClock, dir: string, settings: Record<string, unknown> = {}): Promise<Rig> {
  const config = fileLinksSchema.parse({ public_base_url: BASE, ttl_hours: 2, ...settings });
  if (config.public_base_url === undefined) throw new Error("unreachable");
  const links = createFileLinks({
    config: { ...config, public_base_url: config.public_base_url },
    dataDir: dir,
    platform: "line",
    accountId: "ln",
    clock,
    log,
  });
  await links.open();
  const endpoint = await listenWebhook({
    host: "127.0.0.1",
    port: 0,
    path: "/line/webhook",
    name: "test",
    log,
    routes: [links.route],
    handle: async () => textAnswer(200),
  });
  forThisTest({ close: () => endpoint.close().then(() => links.close()) });
  return { links, endpoint, dir, local: (url) => url.replace("https://bot.example.com", endpoint.url) };
}

it("serves a published file whole, by range and to HEAD, with its type and name; anything else under the path is 404", async () => {
  const clock = createManualClock();
  const dir = folder();
  const r = await rig(clock, dir);
  const data = Buffer.from("0123456789".repeat(100));
  const { url, expiresAt } = await r.links.publish(purposeOf("ln", "U1", "m1", "out/report.pdf"), file("report é.pdf", data));
  expect(url).toMatch(/^https:\/\/bot\.example\.com\/line\/files\/[A-Za-z0-9_-]{43}\/report%20%C3%A9\.pdf$/);
  expect(expiresAt).toBe(clock.now() + 2 * HOUR);

  const whole = await fetch(r.local(url));
  expect(whole.status).toBe(200);
  expect(Buffer.from(await whole.arrayBuffer())).toEqual(data);
  expect(whole.headers.get("content-type")).toBe("application/pdf");
  expect(whole.headers.get("content-disposition")).toBe(`attachment; filename="report _.pdf"; filename*=UTF-8''report%20%C3%A9.pdf`);
  expect(whole.headers.get("accept-ranges")).toBe("bytes");
  expect(whole.headers.get("x-content-type-options")).toBe("nosniff");

  const part = await fetch(r.local(url), { headers: { range: "bytes=10-19" } });
  expect(part.status).toBe(206);
  expect(part.headers.get("content-range")).toBe("bytes 10-19/1000");
  expect(await part.text()).toBe("0123456789");
  const tail = await fetch(r.local(url), { headers: { range: "bytes=-5" } });
  expect([tail.status, await tail.text()]).toEqual([206, "56789"]);
  const past = await fetch(r.local(url), { headers: { range: "bytes=1000-" } });
  expect([past.status, past.headers.get("content-range")]).toEqual([416, "bytes */1000"]);
  await past.body?.cancel();

  const head = await fetch(r.local(url), { method: "HEAD" });
  expect([head.status, head.headers.get("content-length"), await head.text()]).toEqual([200, "1000", ""]);

  const token = /files\/([^/]+)\//.exec(url)?.[1] ?? "";
  const wrong = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;
  for (const path of [`/line/files/${wrong}/report.pdf`, "/line/files/", "/line/files/x", `/line/files/${token}/a/b`, `/line/files/${token}%2Fx`]) {
    const got = await fetch(`${r.endpoint.url}${path}`);
    expect([path, got.status, await got.text()]).toEqual([path, 404, ""]);
  }
  // The name segment is the downloader's: the token alone is the capability.
  expect((await fetch(r.local(url.replace(/[^/]+$/, "other.pdf")))).status).toBe(200);
  const post = await fetch(r.local(url), { method: "POST" });
  expect(post.status).toBe(405);
});

it("an image and an audio file are inline (a platform shows them); the same purpose and bytes are one link, another purpose another", async () => {
  const clock = createManualClock();
  const dir = folder();
  const r = await rig(clock, dir);
  const png = Buffer.from("png-bytes");
  const a = await r.links.publish(purposeOf("ln", "U1", "m1", "out/p.png"), file("p.png", png, "image/png", "photo"));
  clock.advance(HOUR);
  const again = await r.links.publish(purposeOf("ln", "U1", "m1", "out/p.png"), file("p.png", png, "image/png", "photo"));
  // A retry keeps the link and its end: what the platform is sent is the same.
  expect(again).toEqual(a);
  const other = await r.links.publish(purposeOf("ln", "U1", "m2", "out/p.png"), file("p.png", png, "image/png", "photo"));
  expect(other.url).not.toBe(a.url);
  const got = await fetch(r.local(a.url));
  expect(got.headers.get("content-disposition")).toMatch(/^inline; filename="p\.png"/);
  expect(got.headers.get("content-type")).toBe("image/png");
  await got.body?.cancel();
});

it("a file that could run script (SVG, HTML) is a download, and no served file runs script on the bridge's origin", async () => {
  const clock = createManualClock();
  const r = await rig(clock, folder());
  const script = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>');
  for (const [name, type] of [
    ["x.svg", "image/svg+xml"],
    ["x.svg", "IMAGE/SVG+XML"],
    ["x.html", "text/html"],
    ["p.png", "image/png"],
  ] as const) {
    const { url } = await r.links.publish(purposeOf("ln", "U1", "m1", `out/${name}${type}`), file(name, script, type, "document"));
    const got = await fetch(r.local(url));
    await got.body?.cancel();
    // A browser that opens the link runs nothing (raw.githubusercontent.com's policy); only raster images, audio and video show in place.
    expect([type, got.headers.get("content-security-policy")]).toEqual([type, "default-src 'none'; style-src 'unsafe-inline'; sandbox"]);
    expect([type, got.headers.get("content-disposition")?.split(";")[0]]).toEqual([type, type === "image/png" ? "inline" : "attachment"]);
  }
});

it("links outlive a restart until they expire; then 404 and the files are deleted", async () => {
  const clock = createManualClock();
  const dir = folder();
  const first = await rig(clock, dir);
  const { url } = await first.links.publish(purposeOf("ln", "U1", "m1", "out/a.txt"), file("a.txt", Buffer.from("kept"), "text/plain"));
  await first.endpoint.close();
  first.links.close();

  clock.advance(HOUR);
  const second = await rig(clock, dir);
  const got = await fetch(second.local(url));
  expect([got.status, await got.text()]).toEqual([200, "kept"]);
  const kept = join(dir, "file-links", "line-ln");
  // The folder names no token: only hashes of them.
  const token = /files\/([^/]+)\//.exec(url)?.[1] ?? "";
  expect(readdirSync(kept).some((n) => n.includes(token))).toBe(false);
  expect(readdirSync(kept).filter((n) => n.endsWith(".bin"))).toHaveLength(1);

  clock.advance(HOUR);
  const expired = await fetch(second.local(url));
  expect([expired.status, await expired.text()]).toEqual([404, ""]);
  // Deleted by the lookup that found it expired, or by the sweep that ran as the clock passed its end.
  await expect.poll(() => readdirSync(kept).filter((n) => n.endsWith(".bin") || n.endsWith(".json"))).toEqual([]);
});

it("the sweep deletes expired files no one asks for; the next open removes what a kill left half-written", async () => {
  const clock = createManualClock();
  const dir = folder();
  const r = await rig(clock, dir);
  await r.links.publish(purposeOf("ln", "U1", "m1", "out/a.txt"), file("a.txt", Buffer.from("a"), "text/plain"));
  const kept = join(dir, "file-links", "line-ln");
  expect(readdirSync(kept).filter((n) => n.endsWith(".bin"))).toHaveLength(1);
  // The sweep runs on the clock: past the link's end, within the sweep's period.
  clock.advance(2 * HOUR + 10 * 60 * 1000);
  await expect.poll(() => readdirSync(kept).filter((n) => n.endsWith(".bin")).length).toBe(0);
  expect(existsSync(join(kept, "key"))).toBe(true);
  // What a kill left half-written (bytes without their meta, a temporary file) is removed by the next open.
  writeFileSync(join(kept, `${"a".repeat(64)}.bin`), "orphan");
  writeFileSync(join(kept, `.${"b".repeat(64)}.json.1.ff.tmp`), "{");
  await r.endpoint.close();
  r.links.close();
  await rig(clock, dir);
  expect(readdirSync(kept)).toEqual(["key"]);
});

it("disk is bounded: past max_total_mb the link closest to its end ends first; a file over max_file_mb is over the limits", async () => {
  const clock = createManualClock();
  const dir = folder();
  const MiB = 1024 * 1024;
  const r = await rig(clock, dir, { max_total_mb: 2, max_file_mb: 1.5 });
  expect(r.links.limits).toEqual({ photo: 1.5 * MiB, voice: 1.5 * MiB, document: 1.5 * MiB });
  const one = await r.links.publish(purposeOf("ln", "U1", "m1", "out/1.bin"), file("1.bin", Buffer.alloc(MiB, 1)));
  clock.advance(1000);
  const two = await r.links.publish(purposeOf("ln", "U1", "m2", "out/2.bin"), file("2.bin", Buffer.alloc(MiB / 2, 2)));
  clock.advance(1000);
  const three = await r.links.publish(purposeOf("ln", "U1", "m3", "out/3.bin"), file("3.bin", Buffer.alloc(MiB, 3)));
  const status = async (url: string) => {
    const got = await fetch(r.local(url), { method: "HEAD" });
    return got.status;
  };
  expect([await status(one.url), await status(two.url), await status(three.url)]).toEqual([404, 200, 200]);
});

it("a range whose If-Range names another version (an ETag not this file's, or a date) is answered whole, as RFC 9110 requires", async () => {
  const clock = createManualClock();
  const r = await rig(clock, folder());
  const data = Buffer.from("0123456789");
  const { url } = await r.links.publish(purposeOf("ln", "U1", "m1", "out/a.txt"), file("a.txt", data, "text/plain"));
  const etag = (await fetch(r.local(url), { method: "HEAD" })).headers.get("etag") ?? "";
  expect(etag).toMatch(/^"[^"]+"$/);
  const answer = async (ifRange: string) => {
    const got = await fetch(r.local(url), { headers: { range: "bytes=2-3", "if-range": ifRange } });
    return [got.status, await got.text()];
  };
  // A resumed download of what the client holds: the range.
  expect(await answer(etag)).toEqual([206, "23"]);
  // What the client holds is not this file (or is named by a date, which the route does not give): the whole file, not a piece to splice.
  expect(await answer('"another-version"')).toEqual([200, "0123456789"]);
  expect(await answer(`W/${etag}`)).toEqual([200, "0123456789"]);
  expect(await answer("Sat, 01 Jan 2000 00:00:00 GMT")).toEqual([200, "0123456789"]);
});

/** Starts a GET of `url` and resolves once its headers came; the body is left unread (a downloader that stopped reading). */
function stalledDownload(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      res.pause();
      resolve(res);
    });
    forThisTest({ close: () => void req.destroy() });
    req.once("error", reject);
    req.end();
  });
}

it("a downloader that stops reading does not keep the endpoint from closing (a channel restart, a shutdown): its download is cut", async () => {
  const clock = createManualClock();
  const dir = folder();
  const r = await rig(clock, dir);
  // Far more than the loopback socket's buffers hold, so the server's writes stall.
  const big = Buffer.alloc(64 * 1024 * 1024, 7);
  const { url } = await r.links.publish(purposeOf("ln", "U1", "m1", "out/big.bin"), file("big.bin", big));
  const res = await stalledDownload(r.local(url));
  expect(res.statusCode).toBe(200);
  await r.endpoint.close();
  // What was already on its way arrives; then the response ends short of the file.
  const cut = new Promise<boolean>((resolve) => res.once("close", () => resolve(!res.complete)));
  res.on("error", () => undefined).resume();
  expect(await cut).toBe(true);
});

it("a request still looking its file up when the endpoint closes does not start its download after the close", async () => {
  const clock = createManualClock();
  const dir = folder();
  const store = await FileLinkStore.open({ dir, clock, ttlMs: HOUR, maxTotalBytes: 128 * 1024 * 1024, log });
  forThisTest({ close: () => store.close() });
  const { token } = await store.put("p", { fileName: "big.bin", mimeType: "application/octet-stream", data: Buffer.alloc(64 * 1024 * 1024, 5) });
  // The real store, its look-up held until the endpoint is closing (a slow database, a busy disk).
  let lookingUp!: () => void;
  const askedFor = new Promise<void>((resolve) => (lookingUp = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held: FileStore = {
    put: (p, f) => store.put(p, f),
    sweep: () => store.sweep(),
    close: () => store.close(),
    find: (t) => (lookingUp(), released.then(() => store.find(t))),
  };
  const endpoint = await listenWebhook({
    host: "127.0.0.1",
    port: 0,
    path: "/line/webhook",
    name: "test",
    log,
    routes: [fileRoute("/line/files", () => held, clock)],
    handle: async () => textAnswer(200),
  });
  forThisTest({ close: () => endpoint.close() });
  // Left unread: had its download started after the close, the close would wait for it for ever.
  const download = stalledDownload(`${endpoint.url}/line/files/${token}/big.bin`).then(
    (res) => `answered ${res.statusCode}`,
    () => "closed unanswered",
  );
  await askedFor;
  const closed = endpoint.close();
  release();
  await closed;
  expect(await download).toBe("closed unanswered");
});

it("files published at the same time stay within max_total_mb too (each sees the other's bytes)", async () => {
  const clock = createManualClock();
  const dir = folder();
  const MiB = 1024 * 1024;
  const r = await rig(clock, dir, { max_total_mb: 2, max_file_mb: 1.5 });
  const [a, b] = await Promise.all([
    r.links.publish(purposeOf("ln", "U1", "m1", "out/a.bin"), file("a.bin", Buffer.alloc(1.5 * MiB, 1))),
    r.links.publish(purposeOf("ln", "U2", "m1", "out/b.bin"), file("b.bin", Buffer.alloc(1.5 * MiB, 2))),
  ]);
  const kept = join(dir, "file-links", "line-ln");
  const onDisk = readdirSync(kept)
    .filter((n) => n.endsWith(".bin"))
    .reduce((sum, n) => sum + statSync(join(kept, n)).size, 0);
  expect(onDisk).toBeLessThanOrEqual(2 * MiB);
  const statuses = await Promise.all([a.url, b.url].map(async (url) => (await fetch(r.local(url), { method: "HEAD" })).status));
  // The one published first made room for the other.
  expect(statuses).toEqual([404, 200]);
});

it("public_base_url must be https with a path and no query", () => {
  for (const bad of ["http://bot.example.com/files", "https://bot.example.com", "https://bot.example.com/", "https://bot.example.com/f?x=1", "ftp://x/y"]) {
    expect(fileLinksSchema.safeParse({ public_base_url: bad }).success, bad).toBe(false);
  }
  expect(fileLinksSchema.parse({}).public_base_url).toBeUndefined();
  expect(fileLinksSchema.parse({ public_base_url: "https://bot.example.com:8443/a/files" }).public_base_url).toBe("https://bot.example.com:8443/a/files");
});
