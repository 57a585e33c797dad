import { createServer, type IncomingHttpHeaders } from "node:http";
import request from "supertest";
import { request as undiciRequest } from "undici";
import { describe, expect, it, onTestFinished } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { parseEventStream, type StreamEvent } from "../../shared/client/index.js";
import { ResponseObject } from "../../shared/schemas/responses.js";
import type { Instance } from "../../shared/schemas/instances.js";
import { deadPort, forceState, listenOn, replyText, runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;

async function setup(options: Parameters<typeof startEmulator>[0] = {}): Promise<{ org: TestOrg; instance: Instance }> {
  t = forThisTest(await startEmulator(options));
  const org = await signupOrg(t.app);
  return { org, instance: await runningInstance(t, org) };
}

function send(org: TestOrg, instanceId: string, body: Record<string, unknown>, session?: string) {
  const path = session === undefined ? `/v1/instances/${instanceId}/responses` : `/v1/instances/${instanceId}/session/${encodeURIComponent(session)}/responses`;
  return request(t.app)
    .post(path)
    .set(org.auth)
    .send({ model: "test-model", ...body });
}

const say = async (org: TestOrg, instanceId: string, input: string, session?: string, extra: Record<string, unknown> = {}) => {
  const res = await send(org, instanceId, { input, ...extra }, session);
  expect(res.status, res.text).toBe(200);
  return res.body as ResponseObject;
};

describe("replies", () => {
  it("answers a response object: the fake model's reply, the model echoed, usage counted", async () => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, { input: "hello there" });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const body = ResponseObject.parse(res.body);
    expect(body.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(body).toMatchObject({ object: "response", status: "completed", model: "test-model" });
    expect(body.output[0]).toMatchObject({ type: "message", role: "assistant" });
    expect(replyText(body)).toBe("You said: hello there");
    expect(body.usage).toEqual({ input_tokens: 3, output_tokens: 6, total_tokens: 9 });
  });

  it("accepts input as an array of input items", async () => {
    const { org, instance } = await setup();
    const body = await say(org, instance.id, undefined as unknown as string, undefined, {
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "from items" }] }],
    });
    expect(replyText(body)).toBe("You said: from items");
  });

  it.each([
    ["no model", { input: "x", model: undefined }, ["body", "model"]],
    ["no input", { input: undefined }, ["body", "input"]],
    ["a number for input", { input: 5 }, ["body", "input"]],
    ["an empty input array", { input: [] }, ["body", "input"]],
    ["a non-string previous_response_id", { input: "x", previous_response_id: 7 }, ["body", "previous_response_id"]],
  ])("answers 422 for %s", async (_label, body, loc) => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, body);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(loc);
  });

  it("answers 422 for a session id over 256 characters", async () => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, { input: "x" }, "s".repeat(257));
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(["path", "session_id"]);
  });
});

describe("continuity", () => {
  it("a named session remembers its turns; another session on the same instance does not", async () => {
    const { org, instance } = await setup();
    await say(org, instance.id, "first", "alice");
    await say(org, instance.id, "second", "alice");
    expect(replyText(await say(org, instance.id, "!recall", "alice"))).toBe("first\nsecond");
    expect(replyText(await say(org, instance.id, "!recall", "bob"))).toBe("(nothing yet)");
    // Bob's own turn did not join Alice's conversation.
    expect(replyText(await say(org, instance.id, "!count", "alice"))).toBe("3");
  });

  it("the default session (no session in the path) is a context of its own", async () => {
    const { org, instance } = await setup();
    await say(org, instance.id, "in default");
    await say(org, instance.id, "in alice", "alice");
    expect(replyText(await say(org, instance.id, "!recall"))).toBe("in default");
    expect(replyText(await say(org, instance.id, "!recall", "alice"))).toBe("in alice");
  });

  it("previous_response_id continues that chain, across sessions", async () => {
    const { org, instance } = await setup();
    await say(org, instance.id, "one", "alice");
    const two = await say(org, instance.id, "two", "alice");
    await say(org, instance.id, "three", "alice");
    // From Bob's session, branch off Alice's second turn.
    const branched = await say(org, instance.id, "!recall", "bob", { previous_response_id: two.id });
    expect(replyText(branched)).toBe("one\ntwo");
    // The chain goes on from the branch, in Bob's session.
    expect(replyText(await say(org, instance.id, "!recall", "bob"))).toBe("one\ntwo\n!recall");
    // Alice's own conversation is unchanged.
    expect(replyText(await say(org, instance.id, "!recall", "alice"))).toBe("one\ntwo\nthree");
  });

  it("a session id is any string: non-ASCII, emoji, a newline, blanks and % each name their own session", async () => {
    const { org, instance } = await setup();
    const sessions = ["日本", "😀 chat", "line\nbreak", " alice ", "alice", "%E6%97%A5%E6%9C%AC", "a%20b", "a b", "tg:-100123/456"];
    for (const session of sessions) await say(org, instance.id, `hello from ${JSON.stringify(session)}`, session);
    for (const session of sessions) {
      expect(replyText(await say(org, instance.id, "!recall", session)), session).toBe(`hello from ${JSON.stringify(session)}`);
    }
  });

  it("an unknown previous_response_id gets the contract's 400 body", async () => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, { input: "x", previous_response_id: "resp_doesnotexist" }, "alice");
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        type: "invalid_request_error",
        code: "previous_response_not_found",
        param: "previous_response_id",
        message: "Previous response with id 'resp_doesnotexist' not found.",
      },
    });
  });

  it("another instance's response id is unknown here", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app, { tier: "crab" });
    const a = await runningInstance(t, org, { name: "a" });
    const b = await runningInstance(t, org, { name: "b" });
    const first = await say(org, a.id, "secret of a");
    const res = await send(org, b.id, { input: "!recall", previous_response_id: first.id });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("previous_response_not_found");
  });
});

describe("streaming", () => {
  it("stream: true relays server-sent events; the deltas make the final text", async () => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, { input: "!long 700", stream: true }, "alice").buffer(true);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
    const events: StreamEvent[] = [];
    async function* once(text: string) {
      yield text;
    }
    for await (const event of parseEventStream(once(res.text))) events.push(event);
    expect(events[0]?.event).toBe("response.created");
    expect(events.at(-1)?.event).toBe("response.completed");
    const deltas = events.filter((e) => e.event === "response.output_text.delta").map((e) => (e.data as { delta: string }).delta);
    expect(deltas.length).toBeGreaterThan(1);
    const completed = ResponseObject.parse((events.at(-1)!.data as { response: unknown }).response);
    expect(deltas.join("")).toBe(replyText(completed));
    expect(replyText(completed)).toHaveLength(700);
    // A streamed turn is part of the conversation like any other.
    expect(replyText(await say(org, instance.id, "!recall", "alice"))).toBe("!long 700");
  });
});

describe("gateway failures", () => {
  const expect502 = (res: request.Response) => {
    expect(res.status).toBe(502);
    expect(typeof res.body.detail?.error).toBe("string");
    expect(Object.keys(res.body)).toEqual(["detail"]);
  };

  it("502 when the gateway is down", async () => {
    const { org, instance } = await setup();
    await t.emulator.gateway.close();
    expect502(await send(org, instance.id, { input: "hi" }));
    expect502(await send(org, instance.id, { input: "hi" }, "alice"));
  });

  it("502 when the instance's gateway_url points at a dead port", async () => {
    const { org, instance } = await setup();
    await forceState(t.app, instance.id, { status: "running", gateway_url: `http://127.0.0.1:${await deadPort()}` });
    expect502(await send(org, instance.id, { input: "hi" }));
  });

  it("502 when the gateway resets the connection, then fine again", async () => {
    const { org, instance } = await setup();
    const fault = await request(t.app).post("/_emulator/faults").send({ target: "gateway", instance_id: instance.id, error: "reset", times: 1 });
    expect(fault.status).toBe(201);
    expect502(await send(org, instance.id, { input: "hi" }));
    expect(replyText(await say(org, instance.id, "hi"))).toBe("You said: hi");
  });

  it("502 when the gateway does not answer in time", async () => {
    const { org, instance } = await setup({ gatewayTimeoutMs: 150 });
    await request(t.app).post("/_emulator/faults").send({ target: "gateway", instance_id: instance.id, error: "timeout", times: 1 }).expect(201);
    const res = await send(org, instance.id, { input: "hi" });
    expect502(res);
    expect(res.body.detail.error).toMatch(/timed out/);
  });

  it("502 when the gateway answers a 5xx", async () => {
    const { org, instance } = await setup();
    expect502(await send(org, instance.id, { input: "!fail 503" }));
  });

  it.each([429, 400, 404])("passes a gateway %i through with its status and body unchanged", async (status) => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, { input: `!fail ${status}` }, "alice");
    expect(res.status).toBe(status);
    // What the gateway itself answers to the same request.
    const direct = await undiciRequest(`${instance.gateway_url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-key": "alice" },
      body: JSON.stringify({ model: "test-model", input: `!fail ${status}` }),
    });
    expect(direct.statusCode).toBe(status);
    expect(res.text).toBe(await direct.body.text());
    expect(res.body.error.code).toBe("simulated_failure");
  });
});

describe("another Responses server as the gateway", () => {
  interface Seen {
    url: string;
    headers: IncomingHttpHeaders;
    body: unknown;
  }

  async function tinyResponsesServer(answer?: { status: number; text: string }) {
    const seen: Seen[] = [];
    let n = 0;
    const server = createServer((req, res) => {
      let text = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (text += chunk));
      req.on("end", () => {
        const body = JSON.parse(text) as { model: string; input: string };
        seen.push({ url: req.url ?? "", headers: req.headers, body });
        if (answer) {
          res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.text);
          return;
        }
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            id: `resp_other${++n}`,
            object: "response",
            status: "completed",
            model: body.model,
            output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text: `other server heard: ${body.input}` }] }],
            usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
          }),
        );
      });
    });
    const listening = await listenOn(server);
    onTestFinished(listening.close);
    return { url: listening.url, seen };
  }

  it("works through the gatewayUrl option, with the body passed through unchanged and the session named", async () => {
    const other = await tinyResponsesServer();
    const { org, instance } = await setup({ gatewayUrl: other.url });
    expect(instance.gateway_url).toBe(other.url);
    const body = {
      model: "gpt-x",
      input: "ping",
      instructions: "be brief",
      tools: [{ type: "function", name: "lookup", parameters: { type: "object" } }],
      temperature: 0.25,
      metadata: { trace: "abc" },
    };
    const res = await request(t.app).post(`/v1/instances/${instance.id}/session/carol/responses`).set(org.auth).send(body);
    expect(res.status).toBe(200);
    expect(replyText(res.body)).toBe("other server heard: ping");
    expect(res.body.id).toBe("resp_other1");
    expect(other.seen).toHaveLength(1);
    expect(other.seen[0]!.url).toBe("/v1/responses");
    expect(other.seen[0]!.headers["x-session-key"]).toBe("carol");
    expect(other.seen[0]!.body).toEqual(body);
    // The default session is named `main`.
    await say(org, instance.id, "again");
    expect(other.seen[1]!.headers["x-session-key"]).toBe("main");
  });

  it("works for an existing instance pointed at it through the control plane", async () => {
    const other = await tinyResponsesServer();
    const { org, instance } = await setup();
    const moved = await forceState(t.app, instance.id, { status: "running", gateway_url: other.url });
    expect(moved.gateway_url).toBe(other.url);
    expect((await request(t.app).get(`/v1/instances/${instance.id}/status`).set(org.auth)).body.gateway_url).toBe(other.url);
    expect(replyText(await say(org, instance.id, "pong"))).toBe("other server heard: pong");
  });

  it("passes that server's 4xx through byte for byte, and turns a body that is not JSON into a 502", async () => {
    const raw = '{"error":{"message":"quota","type":"rate_limit_error","code":"rate_limited","param":null},"extra":[1,2]}';
    const limited = await tinyResponsesServer({ status: 429, text: raw });
    const { org, instance } = await setup({ gatewayUrl: limited.url });
    const res = await send(org, instance.id, { input: "x" });
    expect(res.status).toBe(429);
    expect(res.text).toBe(raw);

    const broken = await tinyResponsesServer({ status: 200, text: "<html>oops</html>" });
    await forceState(t.app, instance.id, { status: "running", gateway_url: broken.url });
    const bad = await send(org, instance.id, { input: "x" });
    expect(bad.status).toBe(502);
    expect(typeof bad.body.detail.error).toBe("string");
  });
});
