/**
 * The floor under any relay (issue #35): the least a Telegram-to-service relay can do per turn
 * and still keep the daemon's promise (nothing lost, nothing sent twice), with nothing else. Run
 * by bench/daemon.ts as one more side of its rounds (`BENCH_DAEMON_FLOOR=1`), so its ratio to
 * the direct client says what any relay of this design could reach on this machine.
 *
 * Per turn it does only what the promise needs: the update is taken from a long poll, a record
 * "accepted" is made durable before the poll's offset moves past it, the service is called, a
 * record "reply" is made durable before the reply is sent, the reply is sent, a record "done".
 * No validation, no logs, no metrics, no queue, no retries, no access rules, no chunking. The
 * records are group-committed (all records made while a write is under way go in the next single
 * `O_DSYNC` write), which the daemon does not do: the floor takes the cheaper design.
 *
 * Arguments: Bot API root, bot token, service base URL, API key, instance id, journal file.
 */
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { Agent, request } from "undici";

const [apiRoot, token, baseUrl, apiKey, instanceId, journalPath] = process.argv.slice(2);
if (!apiRoot || !token || !baseUrl || !apiKey || !instanceId || !journalPath)
  throw new Error("usage: floor-relay API_ROOT TOKEN BASE_URL API_KEY INSTANCE JOURNAL");

const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
const journal = await open(journalPath, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_DSYNC);

/** Group commit: records made while a write is under way wait for the next one, which takes them all. */
let pending: { line: string; done: () => void }[] = [];
let writing = false;
function record(entry: object): Promise<void> {
  return new Promise((done) => {
    pending.push({ line: `${JSON.stringify(entry)}\n`, done });
    if (!writing) void flush();
  });
}
async function flush(): Promise<void> {
  writing = true;
  while (pending.length) {
    const batch = pending;
    pending = [];
    await journal.write(batch.map((p) => p.line).join(""));
    for (const p of batch) p.done();
  }
  writing = false;
}

async function call(url: string, body: object, headers: Record<string, string> = {}): Promise<unknown> {
  const res = await request(url, {
    method: "POST",
    dispatcher: agent,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return res.body.json();
}

interface Update {
  update_id: number;
  message?: { chat: { id: number }; text?: string };
}
interface Answer {
  output?: { content?: { type: string; text?: string }[] }[];
}

async function turn(update: Update): Promise<void> {
  const chat = update.message?.chat.id;
  const text = update.message?.text;
  if (chat === undefined || text === undefined) return;
  const answer = (await call(
    `${baseUrl}/v1/instances/${instanceId}/session/tg-${chat}/responses`,
    { model: "m", input: text },
    { authorization: `Bearer ${apiKey}` },
  )) as Answer;
  const reply = answer.output?.flatMap((o) => o.content ?? []).find((c) => c.type === "output_text")?.text ?? "";
  await record({ k: "reply", u: update.update_id, reply });
  await call(`${apiRoot}/bot${token}/sendMessage`, { chat_id: chat, text: reply });
  await record({ k: "done", u: update.update_id });
}

let offset = 0;
for (;;) {
  const polled = (await call(`${apiRoot}/bot${token}/getUpdates`, { offset, timeout: 30 })) as { result: Update[] };
  // Accepted durably before the offset moves past them: a crash after this never loses one.
  await Promise.all(polled.result.map((u) => record({ k: "accepted", u: u.update_id, m: u.message })));
  for (const u of polled.result) {
    offset = Math.max(offset, u.update_id + 1);
    void turn(u);
  }
}
