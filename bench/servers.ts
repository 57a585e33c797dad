/**
 * The servers of `npm run bench`'s HTTP lines, in a process of their own (bench/run.ts starts it):
 * the load generator's CPU is then not the servers', as with wrk against a server. A bare express
 * app answering a fixed JSON, a stateless echo of `POST /v1/responses`, and the emulator with an
 * organization, a running instance, a key scoped to it, and a sandbox with an instance of its own.
 * Over IPC it sends what the load needs, then answers `cpu` with its CPU time so far, and stops on `close`.
 */
import express from "express";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { createEmulator } from "../emulator/index.js";
import { createServiceClient } from "../shared/client/index.js";
import { benchInstance } from "./load.js";

/** What bench/run.ts gets once the servers listen. */
export interface BenchServers {
  hello: string;
  echo: string;
  emulator: string;
  gateway: string;
  instanceId: string;
  scopedKey: string;
  sandboxKey: string;
  sandboxInstanceId: string;
}
export type ServersMessage = { ready: BenchServers } | { cpu: NodeJS.CpuUsage } | { writes: number };

async function listen(app: express.Express): Promise<string> {
  const server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * What a user would run instead of the emulator for a turn: a stateless server answering
 * `POST /v1/responses` with an echo in the Responses shape (as a Prism mock or a ten-line
 * handler would), no conversation kept, no key checked, nothing recorded.
 */
function echoServer(): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(express.json());
  let n = 0;
  app.post("/v1/responses", (req, res) => {
    const input = typeof req.body?.input === "string" ? req.body.input : "";
    n++;
    res.json({
      id: `resp_${n}`,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status: "completed",
      model: String(req.body?.model ?? "m"),
      output: [
        {
          type: "message",
          id: `msg_${n}`,
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: `You said: ${input}`, annotations: [] }],
        },
      ],
      usage: { input_tokens: 1, output_tokens: 3, total_tokens: 4 },
    });
  });
  return app;
}

const send = (message: ServersMessage) => process.send!(message);

const hello = express();
hello.get("/hello", (_req, res) => void res.json({ ok: true }));
const agent = new Agent({ keepAliveTimeout: 30_000 });
const emulator = await createEmulator({ provisionMs: 0 });
const { url, api, instance } = await benchInstance(emulator, agent);
const key = await api.createKey({ body: { name: "bench", instance_ids: [instance.id], permissions: ["read", "interact"] } });
// The same GET inside a sandbox: its key puts every request in the sandbox's context and journal.
const sandbox = await emulator.sandboxes.create();
const inSandbox = createServiceClient({ baseUrl: url, dispatcher: agent, apiKey: sandbox.apiKey });
await inSandbox.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
const sandboxed = await inSandbox.createInstance({ body: { name: "bench" } });

process.on("message", (message: string) => {
  if (message === "cpu") send({ cpu: process.cpuUsage() });
  if (message === "writes") send({ writes: emulator.store.writes });
  if (message === "close") void emulator.close().finally(() => process.exit(0));
});
send({
  ready: {
    hello: await listen(hello),
    echo: await listen(echoServer()),
    emulator: url,
    gateway: emulator.gateway.urlFor(instance.id),
    instanceId: instance.id,
    scopedKey: key.raw_key,
    sandboxKey: sandbox.apiKey,
    sandboxInstanceId: sandboxed.id,
  },
});
