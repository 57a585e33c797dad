/** The PostgreSQL state options: defaults, the checks that keep a lease safe, and a URL without its password. */
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import { secretsOf } from "../../../daemon/config/secrets.js";
import { describeUrl, resolvePostgresOptions } from "../../../daemon/state/postgres/options.js";

describe("postgres state options", () => {
  it("fills the documented defaults", () => {
    const o = resolvePostgresOptions({ kind: "postgres", url: "postgres://db/bridge", nodeId: "n1" });
    expect(o).toEqual({
      url: "postgres://db/bridge",
      nodeId: "n1",
      leaseTtlMs: 15_000,
      renewEveryMs: 5_000,
      pollMs: 2_000,
      handoverGraceMs: 1_000,
      fenceMarginMs: 3_000,
      poolSize: 10,
      maxAttachmentBytes: 20 * 1024 * 1024,
    });
    expect(resolvePostgresOptions({ kind: "postgres", url: "postgres://db/bridge", leaseTtlMs: 1_500 }).fenceMarginMs).toBe(300);
  });

  it("refuses a renewal period that one lost renewal would turn into a lost lease", () => {
    expect(() => resolvePostgresOptions({ kind: "postgres", url: "postgres://db/x", leaseTtlMs: 10_000, renewEveryMs: 6_000 })).toThrow(
      /renewEveryMs must be under half of leaseTtlMs/,
    );
  });

  it("refuses a fence margin that leaves no time to act between renewals", () => {
    expect(() => resolvePostgresOptions({ kind: "postgres", url: "postgres://db/x", leaseTtlMs: 10_000, fenceMarginMs: 8_000 })).toThrow(
      /fenceMarginMs leaves no time/,
    );
  });

  it("describes a URL without its password", () => {
    expect(describeUrl("postgres://bridge:s3cret@db.example:5432/bridge")).toBe("postgres://bridge:***@db.example:5432/bridge");
    expect(describeUrl("not a url")).not.toContain("not a url");
  });

  it("is the config's state section; the file journal stays the default, a terminal channel cannot move, the password is a secret", () => {
    const base = { service: { baseUrl: "http://svc", apiKey: "svc_sk_test_abc" }, routes: [{ match: {}, instance: "i" }] };
    expect(parseConfig(base, {}, "t").state).toEqual({ kind: "file" });
    const url = "postgres://bridge:pg-s3cret@db:5432/bridge";
    const pgConfig = parseConfig(
      { ...base, state: { kind: "postgres", url }, channels: [{ type: "telegram", id: "tg", token: "123456:AAbcdefghijklmnopqrstuvwxyz01234567" }] },
      {},
      "t",
    );
    expect(pgConfig.state).toMatchObject({ kind: "postgres", url, leaseTtlMs: 15_000 });
    expect(secretsOf(pgConfig)).toContain("pg-s3cret");
    expect(() => parseConfig({ ...base, state: { kind: "postgres", url }, channels: [{ type: "terminal" }] }, {}, "t")).toThrow(
      /terminal channel belongs to one machine/,
    );
    expect(() => parseConfig({ ...base, state: { kind: "postgres", url, leaseTTL: 5 } }, {}, "t")).toThrow(/leaseTTL/);
  });
});
