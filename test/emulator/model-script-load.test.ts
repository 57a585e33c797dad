/**
 * Loading model scripts: a script with an error is refused whole, with the
 * place named (a JSON path, and the line in a file), wherever it comes from:
 * a file at start, `createEmulator({ modelScript })`, or the control plane.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { describe, expect, it, onTestFinished } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { createEmulator } from "../../emulator/index.js";
import { parseScriptText } from "../../emulator/gateway/script/index.js";
import { runCli } from "../helpers/cli.js";
import { runningInstance, signupOrg, startEmulator, tempDir, type TestEmulator } from "../helpers/emulator.js";

let t: TestEmulator | undefined;

const problemsOf = (text: string) => {
  const loaded = parseScriptText(text);
  if (loaded.ok) throw new Error("the script was accepted");
  return loaded.problems;
};

describe("a script file with an error is refused, naming the place", () => {
  it("an unknown field: its path and line", () => {
    const text = `{
  // a comment, and trailing commas, are fine
  "rules": [
    { "match": { "input": "hi" }, "answer": { "text": "hello" }, },
    { "match": { "inptu": "hi" }, "answer": { "text": "hello" } },
  ],
}`;
    expect(problemsOf(text)).toEqual([{ path: "$.rules[1].match.inptu", at: ["rules", 1, "match", "inptu"], line: 5, message: "Unknown field 'inptu'" }]);
  });

  it("a bad regular expression", () => {
    const problems = problemsOf(`{"rules": [{"match": {"regex": "(unclosed"}, "answer": {"text": "x"}}]}`);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ path: "$.rules[0].match.regex", line: 1 });
    expect(problems[0]!.message).toContain("Not a valid regular expression: /(unclosed/");
  });

  it("an output that does not fit the schema it claims", () => {
    const text = JSON.stringify(
      {
        rules: [
          {
            match: { format: true },
            answer: {
              schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
              output: { n: "three" },
            },
          },
        ],
      },
      null,
      2,
    );
    const problems = problemsOf(text);
    const outputLine = text.split("\n").findIndex((l) => l.includes('"output"')) + 1;
    expect(problems).toEqual([
      {
        path: "$.rules[0].answer.output",
        at: ["rules", 0, "answer", "output"],
        line: outputLine,
        message: "Does not fit its schema: $.n: expected integer, got string",
      },
    ]);
  });

  it("an answer of two kinds at once, and text that is not JSON", () => {
    expect(problemsOf(`{"rules": [{"answer": {"refusal": "no", "error": {"status": 429}}}]}`)[0]).toMatchObject({
      path: "$.rules[0].answer.refusal",
      message: "'refusal' cannot be combined with error",
    });
    expect(problemsOf(`{"rules": [`)[0]!.message).toMatch(/^not valid JSON at line 1 column \d+/);
  });
});

describe("where scripts are loaded", () => {
  it("createEmulator refuses a bad script file before opening anything, naming the file and the place", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const file = join(dir.path, "model.jsonc");
    writeFileSync(file, `{"rules": [{"match": {"regex": "["}, "answer": {"text": "x"}}]}`);
    const dataDir = join(dir.path, "data");
    await expect(createEmulator({ dataDir, modelScript: file })).rejects.toThrow(
      `The model script ${file} was refused:\n$.rules[0].match.regex (line 1): Not a valid regular expression: /[/`,
    );
    // Nothing was opened: the same data directory opens (it is not left locked).
    const opened = await createEmulator({ dataDir });
    await opened.close();
  });

  it("--model-script with an error stops the process at start with the file and the place, in one message", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const file = join(dir.path, "model.jsonc");
    writeFileSync(file, `{\n  "rules": [{ "answer": { "txt": "x" } }]\n}`);
    const run = runCli(["--port", "0", "--in-memory", "--model-script", file]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toBe(
      `emulator: The model script ${file} was refused:\n$.rules[0].answer.txt (line 2): Unknown field 'txt'\n` +
        "$.rules[0].answer (line 2): An answer needs one of text, tool_calls, output, refusal, reasoning, error, failed\n",
    );
    expect(run.stdout()).not.toContain("emulator listening on");
  });

  it("a script file in force from the start answers", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const file = join(dir.path, "model.jsonc");
    writeFileSync(
      file,
      `{ "rules": [ { "name": "greeting", "match": { "regex": "^hi\\\\b", "flags": "i" }, "answer": { "text": "Hello from the script." } } ] }`,
    );
    t = forThisTest(await startEmulator({ modelScript: file }));
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    const res = await request(t.app).post(`/v1/instances/${instance.id}/responses`).set(org.auth).send({ model: "m", input: "Hi there" });
    expect(res.body.output[0].content[0].text).toBe("Hello from the script.");
    expect(res.headers["x-emulator-model-rule"]).toBe("greeting");
  });

  it("the control plane sets, reads and clears the global and an instance's script; a bad one is 422 and the old one stays", async () => {
    t = forThisTest(await startEmulator());
    const org = await signupOrg(t.app);
    const instance = await runningInstance(t, org);
    const say = async (input: string) => {
      const res = await request(t!.app).post(`/v1/instances/${instance.id}/responses`).set(org.auth).send({ model: "m", input });
      return res.body.output[0].content[0].text as string;
    };
    const global = { rules: [{ name: "g", match: { contains: "ping" }, answer: { text: "global pong" } }] };
    const own = { rules: [{ name: "i", match: { input: "ping" }, answer: { text: "instance pong" } }] };

    const set = await request(t.app).put("/_emulator/model-script").send(global);
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ scope: "global", hits: { g: 0 } });
    expect(await say("ping")).toBe("global pong");
    expect((await request(t.app).put(`/_emulator/instances/${instance.id}/model-script`).send(own)).status).toBe(200);
    // The instance's rules are tried first, then the global ones.
    expect(await say("ping")).toBe("instance pong");
    expect(await say("ping pong")).toBe("global pong");

    const bad = await request(t.app)
      .put(`/_emulator/instances/${instance.id}/model-script`)
      .send({ rules: [{ match: { regex: "(" }, answer: { text: "x" } }, { answer: {} }] });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      { loc: ["body", "rules", 0, "match", "regex"], msg: "Not a valid regular expression: /(/", type: "model_script" },
      {
        loc: ["body", "rules", 1, "answer"],
        msg: "An answer needs one of text, tool_calls, output, refusal, reasoning, error, failed",
        type: "model_script",
      },
    ]);
    expect(await say("ping")).toBe("instance pong");
    const got = await request(t.app).get(`/_emulator/instances/${instance.id}/model-script`);
    expect(got.body).toMatchObject({ scope: "instance", instance_id: instance.id, hits: { i: 2 } });

    expect((await request(t.app).delete(`/_emulator/instances/${instance.id}/model-script`)).status).toBe(204);
    expect((await request(t.app).delete("/_emulator/model-script")).status).toBe(204);
    expect(await say("ping")).toBe("You said: ping");
    expect((await request(t.app).get("/_emulator/model-script")).body).toEqual({ scope: "global", script: null, hits: {} });
    expect((await request(t.app).get("/_emulator/instances/nope/model-script")).status).toBe(404);
  });
});

describe("the documentation's examples", () => {
  const contract = readFileSync(new URL("../../docs/api-contract.md", import.meta.url), "utf8");
  const section = contract.slice(contract.indexOf("### Scripting the model"));

  it("the example script loads", () => {
    const example = /```jsonc\n([\s\S]*?)```/.exec(section)![1]!;
    expect(parseScriptText(example)).toMatchObject({ ok: true });
  });

  it("every answer of the table of kinds is a valid answer", () => {
    const rows = [...section.matchAll(/^\| [a-z ]+ \| `(\{.*?\})` \|/gm)].map((m) => m[1]!);
    expect(rows).toHaveLength(8);
    for (const answer of rows) expect(parseScriptText(`{"rules": [{"answer": ${answer}}]}`), answer).toMatchObject({ ok: true });
  });
});
