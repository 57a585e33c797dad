/**
 * Workspace files (every route needs the `files` permission and a running
 * instance). Each client path goes through the one resolver in
 * `workspace/paths.ts`; uploads stream to a staging file and are renamed into
 * place, downloads stream from disk: neither is ever held in memory whole.
 */
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { extname } from "node:path";
import { finished, pipeline } from "node:stream/promises";
import type { Readable } from "node:stream";
import busboy from "busboy";
import type { Request } from "express";
import type { EmulatorEnv } from "../env.js";
import { ApiError, badRequest, tooLarge } from "../errors.js";
import { requireRunning } from "../http/guards.js";
import { HANDLED, type Handlers } from "../http/router.js";
import type { InstanceRecord } from "../store/state.js";
import { MAX_PATH_LENGTH } from "../../shared/schemas/files.js";
import {
  attachmentDisposition,
  listDirectory,
  makeDirectory,
  movePath,
  openForDownload,
  placeFile,
  readText,
  removePath,
  writeText,
} from "../workspace/files.js";
import { resolveInRoot, type WorkspacePath } from "../workspace/paths.js";

type FileHandlers = Pick<Handlers, "listFiles" | "deleteFile" | "readFile" | "writeFile" | "moveFile" | "uploadFile" | "downloadFile" | "mkdir">;

const missing = (field: string, msg = "Field required") => new ApiError(422, [{ loc: ["body", field], msg, type: "missing" }]);

export function fileHandlers(env: EmulatorEnv): FileHandlers {
  const resolve = (instance: InstanceRecord, path: string) => resolveInRoot(env.workspaces.rootOf(instance.id), path);
  /** The running check comes before anything touches the path or the disk. */
  const target = (instance: InstanceRecord, path: string) => {
    requireRunning(instance);
    return resolve(instance, path);
  };

  return {
    listFiles: async ({ instance, query }) => listDirectory(await target(instance, query.path)),

    async readFile({ instance, query }) {
      const path = await target(instance, query.path);
      return { path: path.rel, content: await readText(path) };
    },

    async writeFile({ instance, body }) {
      const path = await target(instance, body.path);
      await writeText(path, body.content, env.workspaces.tempPath());
    },

    async moveFile({ instance, body }) {
      requireRunning(instance);
      const source = await resolve(instance, body.source);
      const destination = await resolve(instance, body.destination);
      await movePath(source, destination);
    },

    async mkdir({ instance, query }) {
      await makeDirectory(await target(instance, query.path));
    },

    async deleteFile({ instance, query }) {
      await removePath(await target(instance, query.path));
    },

    async downloadFile({ instance, query, res }): Promise<typeof HANDLED> {
      const file = await openForDownload(await target(instance, query.path));
      res.status(200);
      // Content-Type from the extension (express's mime table), octet-stream when unknown.
      res.type(extname(file.name));
      res.setHeader("Content-Disposition", attachmentDisposition(file.name));
      res.setHeader("Content-Length", String(file.size));
      res.setHeader("X-Content-Type-Options", "nosniff");
      try {
        await pipeline(file.stream, res);
      } catch {
        // The client went away, or the disk failed mid-way: the status is sent, so cut the stream.
        res.destroy();
      }
      return HANDLED;
    },

    async uploadFile({ instance, req }) {
      requireRunning(instance);
      await receiveUpload(env, req, (path) => resolve(instance, path));
    },
  };
}

type Resolution = { ok: true; path: WorkspacePath } | { ok: false; error: unknown };

/**
 * Reads a `multipart/form-data` upload with busboy. `path` usually comes
 * first: it is resolved before the file's bytes are written, and a refused
 * path means nothing is written at all. A `file` before `path` is spooled to
 * staging and placed once the path is known. Over the size limit: the rest is
 * read and dropped, the partial file removed, 413.
 */
function receiveUpload(env: EmulatorEnv, req: Request, resolve: (path: string) => Promise<WorkspacePath>): Promise<void> {
  const limit = env.settings.uploadLimitBytes;
  if (!/^multipart\/form-data\b/i.test(req.headers["content-type"] ?? "")) {
    return Promise.reject(badRequest("Upload must be multipart/form-data with a 'path' field and a 'file' part."));
  }
  let parser: busboy.Busboy;
  try {
    // limit + 1: busboy flags a file that reaches the limit exactly as truncated.
    parser = busboy({ headers: req.headers, limits: { fileSize: limit + 1, files: 1, fields: 8, parts: 16, fieldSize: MAX_PATH_LENGTH * 4 } });
  } catch {
    return Promise.reject(badRequest("Malformed multipart/form-data request (no boundary)."));
  }

  let pathText: string | undefined;
  let pathTooLong = false;
  let resolution: Promise<Resolution> | undefined;
  let temp: string | undefined;
  let truncated = false;
  let sawFile = false;
  let fileDone: Promise<void> = Promise.resolve();
  let streamError: unknown;

  const resolvePath = (): Promise<Resolution> => {
    resolution ??= resolve(pathText!).then(
      (path): Resolution => ({ ok: true, path }),
      (error: unknown): Resolution => ({ ok: false, error }),
    );
    return resolution;
  };

  parser.on("field", (name, value, info) => {
    if (name !== "path" || pathText !== undefined) return;
    pathText = value;
    pathTooLong = info.valueTruncated || value.length > MAX_PATH_LENGTH;
    if (!pathTooLong && value.length > 0) void resolvePath();
  });

  parser.on("file", (name, stream: Readable) => {
    if (name !== "file" || sawFile) {
      stream.resume();
      return;
    }
    sawFile = true;
    stream.on("limit", () => (truncated = true));
    fileDone = (async () => {
      // Path already given: settle it first, so a refused path writes nothing.
      if (pathText !== undefined && !pathTooLong && pathText.length > 0) {
        const resolved = await resolvePath();
        if (!resolved.ok) {
          stream.resume();
          await finished(stream).catch(() => {});
          return;
        }
      }
      temp = env.workspaces.tempPath();
      await pipeline(stream, createWriteStream(temp));
    })().catch((error: unknown) => {
      streamError ??= error;
    });
  });

  const parsed = new Promise<void>((done, fail) => {
    parser.on("close", () => done());
    parser.on("error", (error: unknown) => {
      req.unpipe(parser);
      req.resume();
      fail(error instanceof ApiError ? error : badRequest(`Malformed multipart/form-data body: ${error instanceof Error ? error.message : "unreadable"}.`));
    });
    // A client that goes away mid-upload: end the parser (and the file part with it), so the partial file is removed.
    req.on("close", () => {
      if (!req.complete) parser.destroy(badRequest("The upload was interrupted before it finished."));
    });
  });
  req.pipe(parser);

  return (async () => {
    try {
      await parsed;
      await fileDone;
      if (truncated) throw tooLarge(`Upload exceeds the limit of ${limit} bytes.`);
      if (pathText === undefined || pathText.length === 0) throw missing("path");
      if (pathTooLong) throw new ApiError(422, [{ loc: ["body", "path"], msg: `String should have at most ${MAX_PATH_LENGTH} characters`, type: "too_big" }]);
      const resolved = await resolvePath();
      if (!resolved.ok) throw resolved.error;
      if (!sawFile) throw missing("file");
      if (streamError !== undefined) throw streamError;
      await placeFile(temp!, resolved.path);
      temp = undefined;
    } catch (error) {
      await fileDone;
      throw error;
    } finally {
      if (temp) await rm(temp, { force: true });
    }
  })();
}
