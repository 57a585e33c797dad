/**
 * How the API treats its connections: the steps every request passes run as one
 * layer without changing what a step's error or answer does, and an idle
 * keep-alive connection is kept long enough that a client's pool closes it
 * first (docs/architecture.md, "The mid-run stall").
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { inOrder } from "../../emulator/http/in-order.js";
import { KEEP_ALIVE_TIMEOUT_MS } from "../../shared/listen.js";

/** Runs `handler` with a bare request/response and resolves with what it passed on (undefined: went on; "answered": stopped). */
function outcome(handler: RequestHandler): Promise<unknown> {
  return new Promise((resolve) => {
    const res = { end: () => resolve("answered") } as unknown as Response;
    handler({} as Request, res, ((error?: unknown) => resolve(error)) as NextFunction);
  });
}

describe("inOrder", () => {
  const step =
    (seen: string[], name: string): RequestHandler =>
    (_req, _res, next) => {
      seen.push(name);
      next();
    };

  it("runs the steps in order and goes on after the last", async () => {
    const seen: string[] = [];
    await expect(outcome(inOrder(step(seen, "a"), step(seen, "b"), step(seen, "c")))).resolves.toBeUndefined();
    expect(seen).toEqual(["a", "b", "c"]);
  });

  it("hands an error passed to next, or thrown (also from a later callback), to the error handler and runs no later step", async () => {
    const seen: string[] = [];
    const boom = new Error("boom");
    await expect(outcome(inOrder((_q, _s, next) => next(boom), step(seen, "after")))).resolves.toBe(boom);
    const late: RequestHandler = (_q, _s, next) => void setImmediate(() => next());
    const thrower: RequestHandler = () => {
      throw boom;
    };
    await expect(outcome(inOrder(late, thrower, step(seen, "after")))).resolves.toBe(boom);
    expect(seen).toEqual([]);
  });

  it("stops where a step answers", async () => {
    const seen: string[] = [];
    await expect(outcome(inOrder((_q, res) => void res.end(), step(seen, "after")))).resolves.toBe("answered");
    expect(seen).toEqual([]);
  });
});

describe("the API's keep-alive", () => {
  let emulator: Emulator;
  let url: string;
  beforeAll(async () => {
    emulator = await createEmulator({ provisionMs: 0 });
    url = await emulator.listen();
  });
  afterAll(() => emulator.close());

  it("tells clients it keeps an idle connection 65 s, longer than a 60 s client pool", async () => {
    const agent = new Agent();
    try {
      const res = await request(`${url}/v1/openapi.json`, { dispatcher: agent });
      await res.body.dump();
      expect(res.headers["keep-alive"]).toBe(`timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`);
      expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThan(60_000);
    } finally {
      await agent.close();
    }
  });
});
