import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import { configHash, planReload } from "../../../daemon/config/reload.js";
import type { DaemonConfigInput } from "../../../daemon/config/schema.js";

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
