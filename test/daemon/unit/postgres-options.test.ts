/** The PostgreSQL state options: defaults, the checks that keep a lease safe, and a URL without its password. */
import { describe, expect, it } from "vitest";
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
});
