/**
 * Several daemons on one PostgreSQL database report their config's hash with
 * each heartbeat: after a reload that reached one node only, the other's
 * /healthz and `agent-bridge check` say the nodes differ; once both run the
 * same file again, they agree. The console's overview (its API, over HTTP)
 * names the node that differs and shows the last reload.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runAgentBridge } from "../../helpers/cli.js";
import { waitUntil } from "../../helpers/wait.js";
import { byName, clusterPerTest } from "./cluster-harness.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const startNodes = clusterPerTest();

/** The telegram channel's access list in a node's config file, replaced. */
function allow(configFile: string, users: string[]): void {
  const config = JSON.parse(readFileSync(configFile, "utf8")) as { channels: { access: { users: string[] } }[] };
  config.channels[0]!.access.users = users;
  writeFileSync(configFile, JSON.stringify(config));
}

describe.skipIf(noPostgres)("config hashes across nodes", () => {
  it("warns in /healthz and check when a reload reached only some nodes", { timeout: 90_000 }, async () => {
    const c = await startNodes({ leaseTtlMs: 5_000 });
    const nodes = ["a", "b"].map((n) => c.node(n));
    await c.owner();
    const a = byName(nodes, "a");
    const b = byName(nodes, "b");
    const healthOf = async (node: typeof a) =>
      ((await (await fetch(`${await node.opsUrl()}/healthz`)).json()) as { config: { hash: string; otherNodesDiffer: string[] } }).config;
    type OverviewConfig = { hash: string; lastReload: { ok: boolean } | null; otherNodesDiffer: { node: string; hash: string }[] | null };
    const consoleOf = async (node: typeof a) => ((await (await fetch(`${await node.opsUrl()}/ui/api/overview`)).json()) as { config: OverviewConfig }).config;
    const hashes = async () => (await c.query("SELECT DISTINCT config_hash FROM node WHERE config_hash IS NOT NULL")).map((r) => r.config_hash);
    await waitUntil(async () => (await hashes()).length === 1 && (await c.query("SELECT id FROM node")).length === 2, "both nodes' heartbeats");
    expect((await healthOf(a)).otherNodesDiffer).toEqual([]);
    expect(await consoleOf(a)).toMatchObject({ lastReload: null, otherNodesDiffer: [] });
    const agree = runAgentBridge(["check", "--config", a.configFile]);
    await agree.exited;
    expect(agree.stdout()).toMatch(/ok +node configs: every running node runs this file \(hash [0-9a-f]{16}\)/);

    allow(b.configFile, ["4101"]);
    const reload = runAgentBridge(["reload", "--config", b.configFile]);
    expect(await reload.exited).toBe(0);
    await waitUntil(async () => (await hashes()).length === 2, "b's new hash in the node table");
    const bHash = (await healthOf(b)).hash;
    await waitUntil(async () => (await healthOf(a)).otherNodesDiffer.includes(bHash), "a to see b's hash");
    const differ = runAgentBridge(["check", "--config", a.configFile]);
    await differ.exited;
    expect(differ.stdout()).toMatch(/warn +node configs: the running nodes' configs differ from this file/);
    expect(differ.stdout()).toContain(`b ${bHash}`);
    // The console names the node, with its hash; b's shows its reload and the node a that runs the old file.
    const aConsole = await consoleOf(a);
    expect(aConsole.otherNodesDiffer).toEqual([{ node: "b", hash: bHash }]);
    const bConsole = await consoleOf(b);
    expect(bConsole.lastReload).toMatchObject({ ok: true, hash: bHash, changed: true });
    await waitUntil(
      async () => (await consoleOf(b)).otherNodesDiffer?.some((n) => n.node === "a" && n.hash === aConsole.hash) === true,
      "b's console to name a",
    );

    allow(a.configFile, ["4101"]);
    a.child.proc.kill("SIGHUP");
    await waitUntil(async () => (await healthOf(a)).hash === bHash && (await healthOf(a)).otherNodesDiffer.length === 0, "a on the same file");
    await waitUntil(async () => (await hashes()).length === 1, "a's new hash in the node table at its next heartbeat");
    expect(await hashes()).toEqual([bHash]);
    await waitUntil(async () => (await consoleOf(b)).otherNodesDiffer?.length === 0, "b's console to see a agree");
    expect(await consoleOf(a)).toMatchObject({ hash: bHash, lastReload: { ok: true }, otherNodesDiffer: [] });
  });
});
