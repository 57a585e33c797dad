/**
 * `GET /_emulator/recordings`: how much of each recording the replay served,
 * for the test helpers' report of recordings no test used. Control plane:
 * loopback or the admin token, like every `/_emulator` route.
 */
import type { Express } from "express";
import type { EmulatorEnv } from "../env.js";
import { sendError } from "../errors.js";
import { authorizeAdmin } from "../http/auth.js";
import type { Replayer } from "./replay.js";

export const RECORDINGS_PATH = "/_emulator/recordings";

export function mountRecordings(app: Express, env: EmulatorEnv, replay: Replayer | undefined): void {
  app.get(RECORDINGS_PATH, (req, res) => {
    try {
      authorizeAdmin(env, req);
    } catch (error) {
      return sendError(res, error);
    }
    res.json({ mode: replay?.mode ?? null, recordings: replay?.usage() ?? [] });
  });
}
