/**
 * A retry after an ambiguous failure (the service handled the call, the
 * answer never arrived) leaves each input once in the visible conversation,
 * for first turns as for later ones. The faults: answers lost after the
 * gateway answered (a proxy resets the connection), and gateway latency
 * longer than the daemon's request timeout (the emulator's control plane).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { converse, startBridge, startService, tempDir, testConfig, type Service } from "./daemon-harness.js";
import { createLossyProxy, responsesInput, type LossyProxy } from "../helpers/lossy-proxy.js";

let service: Service;
let proxy: LossyProxy;
beforeAll(async () => {
  service = await startService();
  proxy = await createLossyProxy(service.url);
});
afterAll(async () => {
  await proxy.close();
  await service.close();
});
afterEach(async () => {
  proxy.setPolicy(() => "pass");
  await service.clearFaults();
});

async function bridge(overrides: Parameters<typeof testConfig>[2] = {}) {
  const dir = tempDir();
  const b = await startBridge(testConfig({ ...service, url: proxy.url }, dir.path, overrides));
  onTestFinished(dir.remove);
  onTestFinished(() => b.daemon.stop({ graceMs: 0 }));
  return b;
}

/** Loses the first answer to each input (once the gateway has answered it). */
function loseFirstAnswers(): void {
  const seen = new Set<string>();
  proxy.setPolicy((request) => {
    const input = responsesInput(request);
    if (input === undefined || input.startsWith("!") || seen.has(input)) return "pass";
    seen.add(input);
    return "reset";
  });
}

describe("exactly once in the conversation", () => {
  it("a reset after the gateway answered: every input once in !recall, first turns and later ones, also after /new", async () => {
    const { chat } = await bridge();
    loseFirstAnswers();
    expect(await converse(chat, "ann", ["m1", "m2", "m3"])).toEqual(["You said: m1", "You said: m2", "You said: m3"]);
    expect(proxy.lost.map(responsesInput)).toEqual(["m1", "m2", "m3"]);
    expect(await converse(chat, "ann", ["!recall"])).toEqual(["m1\nm2\nm3"]);
    // /new: the next message is a first turn again.
    await converse(chat, "ann", ["/new"]);
    expect(await converse(chat, "ann", ["n1", "n2", "!recall"])).toEqual(["You said: n1", "You said: n2", "n1\nn2"]);
    expect(proxy.lost.map(responsesInput)).toEqual(["m1", "m2", "m3", "n1", "n2"]);
  });

  it("gateway latency longer than the request timeout: each input once", async () => {
    const { chat } = await bridge({ service: { baseUrl: proxy.url, apiKey: service.key, requestTimeoutMs: 300 } });
    // The first attempt of the first turn is still being answered when the retry runs.
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: service.instanceIds[0], latency_ms: 600, times: 1 });
    expect(await converse(chat, "bob", ["first"])).toEqual(["You said: first"]);
    await service.admin("/_emulator/faults", { target: "gateway", instance_id: service.instanceIds[0], latency_ms: 600, times: 1 });
    expect(await converse(chat, "bob", ["second"])).toEqual(["You said: second"]);
    // Let the slow first attempts land in the gateway before looking.
    await waitForGatewayResponses(service, 4);
    expect(await converse(chat, "bob", ["third", "!recall"])).toEqual(["You said: third", "first\nsecond\nthird"]);
  });
});

/** Resolves once the gateway holds at least `n` responses (slow attempts recorded too). */
async function waitForGatewayResponses(s: Service, n: number): Promise<void> {
  await expect.poll(() => Object.keys(s.emulator.store.data.gateway.responses).length, { timeout: 5000, interval: 20 }).toBeGreaterThanOrEqual(n);
}
