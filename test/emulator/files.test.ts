/**
 * Workspace files: every route and its statuses, through supertest and the
 * typed client over a real port (streamed upload and download). Hostile
 * paths have their own suite (files-paths), big transfers theirs (files-stream).
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { connect } from "node:net";
import { join } from "node:path";
import { Readable } from "node:stream";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServiceClient, ServiceError } from "../../shared/client/index.js";
import { STAGING_DIR } from "../../emulator/workspace/workspaces.js";
import { forceState, runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;
let org: TestOrg;
let id: string;
let root: string;
let baseUrl: string;

beforeAll(async () => {
  t = await startEmulator();
  org = await signupOrg(t.app, { tier: "lobster" });
  id = (await runningInstance(t, org)).id;
  root = t.emulator.env.workspaces.rootOf(id);
  baseUrl = await t.emulator.listen(0, "127.0.0.1");
});
afterAll(async () => {
  await t?.close();
});

const files = (suffix = "") => `/v1/instances/${id}/files${suffix}`;
const get = (suffix: string, path?: string) => {
  const req = request(t.app).get(files(suffix)).set(org.auth);
  return path === undefined ? req : req.query({ path });
};
const put = (path: string, content: string) => request(t.app).put(files("/content")).set(org.auth).send({ path, content });
const read = (path: string) => get("/content", path);
const mkdir = (path: string) => request(t.app).post(files("/mkdir")).set(org.auth).query({ path });
const del = (path: string) => request(t.app).delete(files()).set(org.auth).query({ path });
const move = (source: string, destination: string) => request(t.app).post(files("/move")).set(org.auth).send({ source, destination });
const upload = (path: string, data: Buffer | string, name = "upload.bin") =>
  request(t.app).post(files("/upload")).set(org.auth).field("path", path).attach("file", Buffer.from(data), name);

const names = (body: unknown) => (body as { entries: { name: string }[] }).entries.map((e) => e.name);
const entry = (body: unknown, name: string) => (body as { entries: Record<string, unknown>[] }).entries.find((e) => e.name === name);
const stagingLeft = () => readdirSync(join(t.emulator.env.workspaces.root, STAGING_DIR));

describe("list", () => {
  it("shows a new instance root: runtime.json, skills/ and workspace/, defaulting to '.'", async () => {
    const res = await get("");
    expect(res.status).toBe(200);
    expect(res.body.path).toBe(".");
    expect(names(res.body)).toEqual(["runtime.json", "skills", "workspace"]);
    const runtime = entry(res.body, "runtime.json")!;
    expect(runtime).toMatchObject({ path: "runtime.json", is_dir: false, size: statSync(join(root, "runtime.json")).size });
    expect(entry(res.body, "workspace")).toMatchObject({ path: "workspace", is_dir: true, size: 0 });
    expect(new Date(runtime.mod_time as string).toISOString()).toBe(runtime.mod_time);
  });

  it("gives entries relative paths, sizes and Unix permission strings", async () => {
    await put("workspace/list/a.txt", "12345").expect(204);
    await mkdir("workspace/list/sub").expect(204);
    chmodSync(join(root, "workspace/list/a.txt"), 0o640);
    chmodSync(join(root, "workspace/list/sub"), 0o750);
    const res = await get("", "workspace/list");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      path: "workspace/list",
      entries: [
        {
          name: "a.txt",
          path: "workspace/list/a.txt",
          is_dir: false,
          size: 5,
          mod_time: statSync(join(root, "workspace/list/a.txt")).mtime.toISOString(),
          permissions: "-rw-r-----",
        },
        {
          name: "sub",
          path: "workspace/list/sub",
          is_dir: true,
          size: 0,
          mod_time: statSync(join(root, "workspace/list/sub")).mtime.toISOString(),
          permissions: "drwxr-x---",
        },
      ],
    });
  });

  it("normalises the path it answers with", async () => {
    const res = await get("", "./workspace//list/sub/..");
    expect(res.status).toBe(200);
    expect(res.body.path).toBe("workspace/list");
  });

  it("404 for a missing directory, 400 for a file", async () => {
    expect((await get("", "workspace/nope")).status).toBe(404);
    const file = await get("", "runtime.json");
    expect(file.status).toBe(400);
    expect(file.body.detail).toMatch(/not a directory/);
  });
});

describe("text content", () => {
  it("writes, reads back and overwrites UTF-8 text, creating parents", async () => {
    await put("workspace/deep/er/note.md", "héllo ✓\n").expect(204);
    expect(readFileSync(join(root, "workspace/deep/er/note.md"), "utf8")).toBe("héllo ✓\n");
    expect((await read("workspace/deep/er/note.md")).body).toEqual({ path: "workspace/deep/er/note.md", content: "héllo ✓\n" });
    await put("workspace/deep/er/note.md", "second").expect(204);
    expect((await read("workspace/deep/er/note.md")).body.content).toBe("second");
    await put("workspace/empty.txt", "").expect(204);
    expect((await read("workspace/empty.txt")).body.content).toBe("");
  });

  it("409 when writing onto a directory or below a file", async () => {
    await mkdir("workspace/adir").expect(204);
    expect((await put("workspace/adir", "x")).status).toBe(409);
    await put("workspace/plain.txt", "x").expect(204);
    expect((await put("workspace/plain.txt/child.txt", "x")).status).toBe(409);
    expect((await put(".", "x")).status).toBe(409);
    expect(readFileSync(join(root, "workspace/plain.txt"), "utf8")).toBe("x");
  });

  it("refuses binary (400) and huge files (413) with a sentence pointing at download", async () => {
    writeFileSync(join(root, "workspace/blob.bin"), Buffer.from([0x89, 0x50, 0x00, 0x01, 0xff]));
    const binary = await read("workspace/blob.bin");
    expect(binary.status).toBe(400);
    expect(binary.body.detail).toMatch(/not UTF-8 text.*download/);
    writeFileSync(join(root, "workspace/latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    expect((await read("workspace/latin1.txt")).status).toBe(400);
    writeFileSync(join(root, "workspace/huge.txt"), "a".repeat(1024 * 1024 + 1));
    const huge = await read("workspace/huge.txt");
    expect(huge.status).toBe(413);
    expect(huge.body.detail).toMatch(/1048577 bytes.*download/);
  });

  it("404 for a missing file, 400 for a directory, 422 without a path or with one over 1024 characters", async () => {
    expect((await read("workspace/missing.txt")).status).toBe(404);
    expect((await read("workspace")).status).toBe(400);
    const none = await get("/content");
    expect(none.status).toBe(422);
    expect(none.body.detail[0].loc).toEqual(["query", "path"]);
    expect((await read("a/".repeat(513))).status).toBe(422);
    expect((await put("a".repeat(1025), "x")).status).toBe(422);
  });

  it("413 for a JSON body over 1 MiB", async () => {
    expect((await put("workspace/big.txt", "a".repeat(1024 * 1024 + 10))).status).toBe(413);
    expect(existsSync(join(root, "workspace/big.txt"))).toBe(false);
  });
});

describe("mkdir, move, delete", () => {
  it("mkdir creates parents, accepts an existing directory, 409 when a file is in the way", async () => {
    await mkdir("workspace/m/n/o").expect(204);
    expect(statSync(join(root, "workspace/m/n/o")).isDirectory()).toBe(true);
    await mkdir("workspace/m/n/o").expect(204);
    await put("workspace/m/file", "x").expect(204);
    expect((await mkdir("workspace/m/file")).status).toBe(409);
    expect((await mkdir("workspace/m/file/below")).status).toBe(409);
  });

  it("moves a file and a directory, creating the destination's parents", async () => {
    await put("workspace/mv/a.txt", "A").expect(204);
    await move("workspace/mv/a.txt", "workspace/mv2/deeper/b.txt").expect(204);
    expect(existsSync(join(root, "workspace/mv/a.txt"))).toBe(false);
    expect(readFileSync(join(root, "workspace/mv2/deeper/b.txt"), "utf8")).toBe("A");
    await move("workspace/mv2", "workspace/renamed").expect(204);
    expect(readFileSync(join(root, "workspace/renamed/deeper/b.txt"), "utf8")).toBe("A");
  });

  it("move: 409 onto an existing path, 404 for a missing source, 400 into itself or for the root", async () => {
    await put("workspace/mx/one.txt", "1").expect(204);
    await put("workspace/mx/two.txt", "2").expect(204);
    expect((await move("workspace/mx/one.txt", "workspace/mx/two.txt")).status).toBe(409);
    expect(readFileSync(join(root, "workspace/mx/two.txt"), "utf8")).toBe("2");
    expect((await move("workspace/mx/one.txt", "workspace")).status).toBe(409);
    expect((await move("workspace/mx/one.txt", ".")).status).toBe(409);
    expect((await move("workspace/mx/none.txt", "workspace/mx/three.txt")).status).toBe(404);
    expect((await move("workspace/mx", "workspace/mx/inner")).status).toBe(400);
    expect((await move(".", "workspace/root-copy")).status).toBe(400);
    expect((await move("workspace/mx/one.txt", "workspace/mx/two.txt/x")).status).toBe(409);
    expect(readFileSync(join(root, "workspace/mx/one.txt"), "utf8")).toBe("1");
    const body = await request(t.app).post(files("/move")).set(org.auth).send({ source: "a" });
    expect(body.status).toBe(422);
  });

  it("deletes a file and a whole directory; 404 when missing; 400 for the root", async () => {
    await put("workspace/del/x/y.txt", "y").expect(204);
    await put("workspace/del/z.txt", "z").expect(204);
    await del("workspace/del/z.txt").expect(204);
    expect(existsSync(join(root, "workspace/del/z.txt"))).toBe(false);
    await del("workspace/del").expect(204);
    expect(existsSync(join(root, "workspace/del"))).toBe(false);
    expect((await del("workspace/del")).status).toBe(404);
    for (const rootish of [".", "./", "workspace/..", "/."]) {
      const res = await del(rootish);
      expect(res.status, rootish).toBe(400);
    }
    expect(names((await get("")).body)).toEqual(["runtime.json", "skills", "workspace"]);
  });
});

describe("upload", () => {
  it("stores the file at path (parents created), replacing an older one", async () => {
    await upload("workspace/up/data.bin", "first").expect(204);
    await upload("workspace/up/data.bin", "second version").expect(204);
    expect(readFileSync(join(root, "workspace/up/data.bin"), "utf8")).toBe("second version");
    expect(stagingLeft()).toEqual([]);
  });

  it("accepts the file part before the path field (spooled)", async () => {
    const res = await request(t.app)
      .post(files("/upload"))
      .set(org.auth)
      .attach("file", Buffer.from("file first"), "f.txt")
      .field("path", "workspace/up/ff.txt");
    expect(res.status).toBe(204);
    expect(readFileSync(join(root, "workspace/up/ff.txt"), "utf8")).toBe("file first");
    expect(stagingLeft()).toEqual([]);
  });

  it("422 without path or file, 400 when not multipart, 409 onto a directory", async () => {
    const noPath = await request(t.app).post(files("/upload")).set(org.auth).attach("file", Buffer.from("x"), "x.txt");
    expect(noPath.status).toBe(422);
    expect(noPath.body.detail[0].loc).toEqual(["body", "path"]);
    const noFile = await request(t.app).post(files("/upload")).set(org.auth).field("path", "workspace/up/nofile");
    expect(noFile.status).toBe(422);
    expect(noFile.body.detail[0].loc).toEqual(["body", "file"]);
    const json = await request(t.app).post(files("/upload")).set(org.auth).send({ path: "workspace/up/json", file: "x" });
    expect(json.status).toBe(400);
    expect((await upload("workspace", "x")).status).toBe(409);
    expect(existsSync(join(root, "workspace/up/nofile"))).toBe(false);
    expect(stagingLeft()).toEqual([]);
  });

  it("an upload cut off mid-way leaves no partial file behind", async () => {
    const { port } = new URL(baseUrl);
    const socket = connect(Number(port), "127.0.0.1");
    await once(socket, "connect");
    const boundary = "cut-boundary";
    const head =
      `--${boundary}\r\ncontent-disposition: form-data; name="path"\r\n\r\nworkspace/cut.bin\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="cut.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`;
    socket.write(
      `POST ${files("/upload")} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${org.apiKey}\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${head.length + 10 * 1024 * 1024}\r\n\r\n${head}`,
    );
    socket.write(Buffer.alloc(256 * 1024, 9));
    // Wait until the bytes are on disk in staging, then vanish.
    await vi.waitFor(() => expect(stagingLeft()).toHaveLength(1), { timeout: 10_000, interval: 5 });
    socket.destroy();
    await vi.waitFor(() => expect(stagingLeft()).toEqual([]), { timeout: 10_000, interval: 5 });
    expect(existsSync(join(root, "workspace/cut.bin"))).toBe(false);
  });

  it("413 over the upload limit, keeping nothing of the partial file; exactly the limit is fine", async () => {
    const small = await startEmulator({ uploadLimitBytes: 64 * 1024 });
    try {
      const o = await signupOrg(small.app);
      const inst = await runningInstance(small, o);
      const dir = small.emulator.env.workspaces.rootOf(inst.id);
      const send = (path: string, size: number) =>
        request(small.app).post(`/v1/instances/${inst.id}/files/upload`).set(o.auth).field("path", path).attach("file", Buffer.alloc(size, 7), "big.bin");
      const over = await send("workspace/big.bin", 64 * 1024 + 1);
      expect(over.status).toBe(413);
      expect(over.body.detail).toBe("Upload exceeds the limit of 65536 bytes.");
      expect(existsSync(join(dir, "workspace/big.bin"))).toBe(false);
      expect(readdirSync(join(small.emulator.env.workspaces.root, STAGING_DIR))).toEqual([]);
      await send("workspace/exact.bin", 64 * 1024).expect(204);
      expect(statSync(join(dir, "workspace/exact.bin")).size).toBe(64 * 1024);
    } finally {
      await small.close();
    }
  });
});

describe("download", () => {
  it("streams the bytes with Content-Type from the extension, attachment filename and length", async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3]);
    writeFileSync(join(root, "workspace/pic.png"), png);
    const res = await get("/download", "workspace/pic.png")
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => done(null, Buffer.concat(chunks)));
      });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("image/png");
    expect(res.headers["content-disposition"]).toBe('attachment; filename="pic.png"');
    expect(res.headers["content-length"]).toBe(String(png.length));
    expect(Buffer.compare(res.body as Buffer, png)).toBe(0);

    const json = await get("/download", "runtime.json");
    expect(json.headers["content-type"]).toBe("application/json; charset=utf-8");
    await put("workspace/noext", "plain").expect(204);
    expect((await get("/download", "workspace/noext")).headers["content-type"]).toBe("application/octet-stream");
  });

  it("escapes quotes in the filename parameter", async () => {
    await put('workspace/say "hi".txt', "q").expect(204);
    const res = await get("/download", 'workspace/say "hi".txt');
    expect(res.status).toBe(200);
    expect(res.headers["content-disposition"]).toBe('attachment; filename="say \\"hi\\".txt"');
  });

  it("names a non-ASCII file with RFC 5987 filename* and an ASCII fallback", async () => {
    await put("workspace/résumé ✓.txt", "cv").expect(204);
    const res = await get("/download", "workspace/résumé ✓.txt");
    expect(res.status).toBe(200);
    expect(res.headers["content-disposition"]).toBe(`attachment; filename="r_sum_ _.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%E2%9C%93.txt`);
    expect(res.headers["content-type"]).toBe("text/plain; charset=utf-8");
  });

  it("404 for a missing file, 400 for a directory", async () => {
    expect((await get("/download", "workspace/none.bin")).status).toBe(404);
    expect((await get("/download", "workspace")).status).toBe(400);
    expect((await get("/download", ".")).status).toBe(400);
  });
});

describe("typed client over a real port", () => {
  it("uploads a stream and downloads it back as a stream, with the file name decoded", async () => {
    const api = createServiceClient({ baseUrl, apiKey: org.apiKey });
    const chunks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(16 * 1024, i));
    const expected = createHash("sha256");
    for (const c of chunks) expected.update(c);
    await api.uploadFile({ instance_id: id, path: "workspace/client/data-1.bin", data: Readable.from(chunks) });

    const listing = await api.listFiles({ instance_id: id, query: { path: "workspace/client" } });
    expect(listing.entries).toEqual([expect.objectContaining({ name: "data-1.bin", size: 64 * 16 * 1024, is_dir: false })]);

    const download = await api.downloadFile({ instance_id: id, query: { path: "workspace/client/data-1.bin" } });
    expect(download.fileName).toBe("data-1.bin");
    expect(download.size).toBe(64 * 16 * 1024);
    expect(download.contentType).toBe("application/octet-stream");
    const got = createHash("sha256");
    for await (const chunk of download.body) got.update(chunk as Buffer);
    expect(got.digest("hex")).toBe(expected.digest("hex"));

    await api.writeFile({ instance_id: id, body: { path: "workspace/client/t.txt", content: "typed" } });
    expect((await api.readFile({ instance_id: id, query: { path: "workspace/client/t.txt" } })).content).toBe("typed");
    await api.moveFile({ instance_id: id, body: { source: "workspace/client/t.txt", destination: "workspace/client/u.txt" } });
    await api.mkdir({ instance_id: id, query: { path: "workspace/client/d" } });
    await api.deleteFile({ instance_id: id, query: { path: "workspace/client/d" } });
    const after = await api.listFiles({ instance_id: id, query: { path: "workspace/client" } });
    expect(after.entries.map((e) => e.name)).toEqual(["data-1.bin", "u.txt"]);
    const missing = await api.readFile({ instance_id: id, query: { path: "workspace/client/t.txt" } }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ServiceError);
    expect((missing as ServiceError).status).toBe(404);
  });
});

describe("instance state", () => {
  it("every file route answers 409 with the status unless the instance is running, changing nothing", async () => {
    const other = await runningInstance(t, org, { name: "sleeper" });
    const dir = t.emulator.env.workspaces.rootOf(other.id);
    const on = (suffix: string) => `/v1/instances/${other.id}/files${suffix}`;
    writeFileSync(join(dir, "workspace/keep.txt"), "keep");
    for (const status of ["stopped", "error"] as const) {
      await forceState(t.app, other.id, { status });
      const calls = [
        request(t.app).get(on("")).set(org.auth),
        request(t.app).get(on("/content")).query({ path: "workspace/keep.txt" }).set(org.auth),
        request(t.app).put(on("/content")).set(org.auth).send({ path: "workspace/new.txt", content: "x" }),
        request(t.app).post(on("/move")).set(org.auth).send({ source: "workspace/keep.txt", destination: "workspace/moved.txt" }),
        request(t.app).post(on("/mkdir")).query({ path: "workspace/newdir" }).set(org.auth),
        request(t.app).delete(on("")).query({ path: "workspace/keep.txt" }).set(org.auth),
        request(t.app).get(on("/download")).query({ path: "workspace/keep.txt" }).set(org.auth),
        request(t.app).post(on("/upload")).set(org.auth).field("path", "workspace/up.txt").attach("file", Buffer.from("x"), "up.txt"),
      ];
      for (const call of calls) {
        const res = await call;
        expect(res.status).toBe(409);
        expect(res.body.detail).toBe(`Instance is not running (status: ${status}).`);
      }
    }
    expect(readdirSync(join(dir, "workspace"))).toEqual(["keep.txt"]);
  });
});
