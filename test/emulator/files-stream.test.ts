/**
 * A 100 MiB upload and download through an emulator in a child process
 * (`agent-bridge emulator --upload-limit-mb 128`, compiled), watching that
 * process's resident memory: both directions must stream (the peak stays far
 * below the file's size above the idle baseline).
 */
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceClient, type ServiceClient } from "../../shared/client/index.js";
import { startCli } from "../helpers/cli.js";
import { providerKey } from "../helpers/emulator.js";

const MiB = 1024 * 1024;
const SIZE = 100 * MiB;

let child: ChildProcess;
let api: ServiceClient;
let instanceId: string;

beforeAll(async () => {
  const run = await startCli(["--port", "0", "--in-memory", "--provision-ms", "0", "--upload-limit-mb", "128"]);
  child = run.child;
  const url = run.url;
  const anon = createServiceClient({ baseUrl: url });
  const signup = await anon.signup({ body: { name: "stream" } });
  api = anon.withKey(signup.api_key);
  await api.updateOrganization({ body: { model_api_keys: { anthropic: providerKey("anthropic") } } });
  instanceId = (await api.createInstance({ body: { name: "big" } })).id;
  // Warm up every code path once, so the baseline includes loaded modules.
  await api.uploadFile({ instance_id: instanceId, path: "workspace/warm.bin", data: Buffer.alloc(MiB, 1) });
  for await (const _ of (await api.downloadFile({ instance_id: instanceId, query: { path: "workspace/warm.bin" } })).body);
});

afterAll(async () => {
  if (child && child.exitCode === null) {
    const gone = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGTERM");
    await gone;
  }
});

const kib = (field: string, pid: number): number => {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
};

/** Resident memory of the child: sampled every 10 ms, and the kernel's own peak (reset first). */
function watchMemory(pid: number) {
  let resetPeak = true;
  try {
    // "5" resets VmHWM to the current RSS (Linux >= 4.0).
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    resetPeak = false;
  }
  let sampled = kib("VmRSS", pid);
  const timer = setInterval(() => (sampled = Math.max(sampled, kib("VmRSS", pid))), 10);
  return {
    stop(): number {
      clearInterval(timer);
      return Math.max(sampled, resetPeak ? kib("VmHWM", pid) : 0);
    },
  };
}

/** 100 MiB of deterministic bytes, one 1 MiB block at a time (never the whole in memory). */
function generated(hash: ReturnType<typeof createHash>): Readable {
  const block = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i += 32) createHash("sha256").update(`block ${i}`).digest().copy(block, i);
  let index = 0;
  return new Readable({
    read() {
      if (index * MiB >= SIZE) return void this.push(null);
      const chunk = Buffer.from(block);
      chunk.writeUInt32BE(index++, 0);
      hash.update(chunk);
      this.push(chunk);
    },
  });
}

describe("100 MiB through a child-process emulator", () => {
  it("uploads and downloads without holding the file in memory", async () => {
    const pid = child.pid!;
    const baseline = kib("VmRSS", pid);

    const sent = createHash("sha256");
    const up = watchMemory(pid);
    await api.uploadFile({ instance_id: instanceId, path: "workspace/big.bin", data: generated(sent) });
    const upPeak = up.stop();

    const listing = await api.listFiles({ instance_id: instanceId, query: { path: "workspace" } });
    expect(listing.entries.find((e) => e.name === "big.bin")?.size).toBe(SIZE);

    const down = watchMemory(pid);
    const download = await api.downloadFile({ instance_id: instanceId, query: { path: "workspace/big.bin" } });
    expect(download.size).toBe(SIZE);
    expect(download.fileName).toBe("big.bin");
    const received = createHash("sha256");
    let bytes = 0;
    for await (const chunk of download.body) {
      received.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    const downPeak = down.stop();

    expect(bytes).toBe(SIZE);
    expect(received.digest("hex")).toBe(sent.digest("hex"));
    // Streaming keeps a few buffers in flight, plus garbage buffers V8 collects once
    // about 64 MiB of them pile up (measured: 30-40 MiB); holding the file would add 100 MiB.
    const growth = { upload: (upPeak - baseline) / MiB, download: (downPeak - baseline) / MiB };
    console.log(
      `child RSS baseline ${(baseline / MiB).toFixed(1)} MiB; peak growth upload ${growth.upload.toFixed(1)} MiB, download ${growth.download.toFixed(1)} MiB`,
    );
    expect(growth.upload).toBeLessThan(64);
    expect(growth.download).toBeLessThan(64);
  });
});
