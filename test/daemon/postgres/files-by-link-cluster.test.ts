/**
 * Reply files by link on a bridge of several machines: two daemon processes
 * on one PostgreSQL database, the Google Chat account owned by one of them.
 * The owner keeps the file the agent made in the database (file_link,
 * file_link_chunk), so the link it sends works through whichever node the
 * load balancer picks: here the OTHER node's endpoint answers the bytes, a
 * byte range and HEAD; after a kill -9 of the owner the survivor still serves
 * the link; once the link's expiry has passed (on the database's clock) it is
 * 404 on every node. The tokens' HMAC key is one row every node shares and
 * appears in no log. LINE likewise: its media fetcher (https only, the
 * certificate verified) reaches the other node through the test's TLS proxy,
 * the stand-in for the load balancer.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { expect, it, onTestFailed, onTestFinished } from "vitest";
import { createFakeGoogleChat } from "../../fakes/googlechat.js";
import { createFakeLine } from "../../fakes/line.js";
import { TEST_TLS_CERT } from "../../fakes/tls-test-cert.js";
import { startTlsProxy } from "../../helpers/tls-proxy.js";
import { startTestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir } from "../daemon-harness.js";
import { type DaemonChild, startDaemonProcess, writeDaemonConfig } from "../daemon-process.js";

const noPostgres = lacks("postgres", import.meta.url);
const PROJECT = "975318642097";
const DM = "spaces/dm-alice";
const UNIT = "googlechat:gc";
const PUBLIC = "https://bridge.example.com";
const PNG_MAGIC = "89504e47";

/** The endpoint a node logged (every node serves one, whoever owns the account). */
const endpointOf = (child: DaemonChild): string | undefined =>
  [...`${child.out()}${child.err()}`.matchAll(/"url":"(http:\/\/127\.0\.0\.1:\d+)\/googlechat\/events"/g)].map((m) => m[1] ?? "").at(-1);

it.skipIf(noPostgres)(
  "a link the owner made is served by any node, ranges included, across a kill -9 of the owner, and 404 once expired",
  { timeout: 90_000 },
  async () => {
    const pgServer = await startTestPostgres();
    onTestFinished(() => pgServer.close());
    const dbUrl = await pgServer.createDatabase("fileslinks");
    const service = await startService({ permissions: ["interact", "files"] });
    onTestFinished(() => service.close());
    const fake = await createFakeGoogleChat({ audienceType: "project-number", audience: PROJECT, spaceWrites: 50 });
    onTestFinished(() => fake.close());
    const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
    onTestFinished(() => db.end());
    const dir = tempDir();
    onTestFinished(dir.remove);
    const children = new Map<string, DaemonChild>();
    onTestFailed(() => {
      for (const [name, c] of children) process.stderr.write(`--- node ${name}\n${c.out()}${c.err()}\n`);
    });
    onTestFinished(async () => {
      for (const c of children.values()) c.kill();
      await Promise.all([...children.values()].map((c) => c.exited));
    });
    const node = (name: string): DaemonChild => {
      mkdirSync(join(dir.path, name), { recursive: true });
      const { configFile } = writeDaemonConfig(join(dir.path, name), {
        service: { baseUrl: service.url },
        apiKey: service.key,
        instance: service.instanceIds[0] ?? "",
        channels: [
          {
            type: "googlechat",
            id: "gc",
            audience_type: "project-number",
            audience: PROJECT,
            serviceAccountKey: fake.serviceAccountKey,
            api: fake.url,
            certsUrl: fake.certsUrl,
            http: { port: 0 },
            streaming: "off",
            file_links: { public_base_url: `${PUBLIC}/googlechat/files` },
            access: { users: ["users/alice"] },
          },
        ],
        extra: {
          logLevel: "info", // each node's endpoint is read from its log
          state: { kind: "postgres", url: dbUrl, nodeId: name, leaseTtlMs: 2_000, pollMs: 200 },
        },
      });
      const child = startDaemonProcess(configFile);
      children.set(name, child);
      return child;
    };
    const owner = async (not?: string): Promise<string> => {
      let holder: string | null = null;
      await waitUntil(
        async () => {
          const { rows } = await db.query("SELECT holder, expires_at > clock_timestamp() AS live FROM lease WHERE unit = $1", [UNIT]);
          const row = rows[0] as { holder: string | null; live: boolean } | undefined;
          holder = row?.live && row.holder !== not ? row.holder : null;
          return holder !== null;
        },
        `a node${not ? ` other than ${not}` : ""} to own ${UNIT}`,
        30_000,
        50,
      );
      return holder ?? "";
    };

    const a = node("a");
    await a.waitFor((o) => o.includes("daemon started"), "a started");
    const first = await owner();
    const b = node("b");
    await b.waitFor((o) => o.includes("daemon started"), "b started");
    const [owning, other] = first === "a" ? [a, b] : [b, a];
    await waitUntil(() => endpointOf(other) && endpointOf(owning), "both nodes' endpoints");
    const otherEndpoint = endpointOf(other) ?? "";
    fake.setEndpoint(`${otherEndpoint}/googlechat/events`);

    // The agent makes a file; the owner sends Chat a card with its link.
    const bot = () => fake.messages(DM).filter((m) => m.sender.type === "BOT");
    await fake.say({ space: DM, text: "!file chart.png" }).answered;
    await waitUntil(() => bot().some((m) => m.cardsV2), "the file's card", 30_000);
    const widgets = bot()
      .flatMap((m) => m.cardsV2 ?? [])
      .flatMap((c) => c.card?.sections ?? [])
      .flatMap((s) => s.widgets ?? []);
    const url = widgets.flatMap((w) => w.buttonList?.buttons ?? [])[0]?.onClick?.openLink?.url ?? "";
    expect(url.startsWith(`${PUBLIC}/googlechat/files/`)).toBe(true);
    const through = (endpoint: string) => url.replace(PUBLIC, endpoint);

    // Through the node that does not own the account: the bytes, a range of them, and HEAD.
    const whole = await fetch(through(otherEndpoint));
    expect(whole.status).toBe(200);
    const bytes = Buffer.from(await whole.arrayBuffer());
    expect(bytes.subarray(0, 4).toString("hex")).toBe(PNG_MAGIC);
    const stored = (await db.query("SELECT size FROM file_link")).rows as { size: string }[];
    expect(stored.map((r) => Number(r.size))).toEqual([bytes.length]);
    const ranged = await fetch(through(otherEndpoint), { headers: { range: "bytes=1-3" } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe(`bytes 1-3/${bytes.length}`);
    expect(Buffer.from(await ranged.arrayBuffer())).toEqual(bytes.subarray(1, 4));
    const head = await fetch(through(otherEndpoint), { method: "HEAD" });
    expect([head.status, head.headers.get("content-length"), head.headers.get("content-type")]).toEqual([200, String(bytes.length), "image/png"]);
    // A wrong token learns nothing, on any node.
    expect((await fetch(`${otherEndpoint}/googlechat/files/${"A".repeat(43)}/chart.png`)).status).toBe(404);

    // The owner is killed: the survivor still serves the link it made (before and after taking over).
    owning.kill();
    await owning.exited;
    const afterKill = await fetch(through(otherEndpoint));
    expect(afterKill.status).toBe(200);
    expect(Buffer.from(await afterKill.arrayBuffer())).toEqual(bytes);
    expect(await owner(first)).not.toBe(first);
    const tail = await fetch(through(otherEndpoint), { headers: { range: `bytes=-2` } });
    expect(Buffer.from(await tail.arrayBuffer())).toEqual(bytes.subarray(-2));

    // Past its expiry (moved into the past on the database's clock, which decides): 404.
    await db.query("UPDATE file_link SET expires_at = clock_timestamp() - interval '1 second'");
    expect((await fetch(through(otherEndpoint))).status).toBe(404);

    // One key for every node, and never in a log.
    const keys = (await db.query("SELECT key FROM file_link_key")).rows as { key: Buffer }[];
    expect(keys).toHaveLength(1);
    const key = keys[0]?.key ?? Buffer.alloc(0);
    for (const c of children.values())
      for (const form of [key.toString("hex"), key.toString("base64"), key.toString("base64url")]) expect(`${c.out()}${c.err()}`).not.toContain(form);
  },
);

const LINE_TOKEN = "clusterLineChannelAccessTokenThatMustStaySecret0123456789abcdef==";
const LINE_SECRET = "00112233445566778899aabbccddeeff";
const ALICE = `U${"7".repeat(32)}`;

it.skipIf(noPostgres)(
  "LINE fetches the owner's image over TLS through the other node, and through the survivor after a kill -9",
  { timeout: 90_000 },
  async () => {
    const pgServer = await startTestPostgres();
    onTestFinished(() => pgServer.close());
    const dbUrl = await pgServer.createDatabase("filelinksline");
    const service = await startService({ permissions: ["interact", "files"] });
    onTestFinished(() => service.close());
    // The load balancer in front of the nodes: TLS ends here, and it forwards to whichever node the test says.
    let behind = "";
    const tls = await startTlsProxy(() => behind);
    onTestFinished(() => tls.close());
    const fake = await createFakeLine({ channelAccessToken: LINE_TOKEN, channelSecret: LINE_SECRET, trustedCa: TEST_TLS_CERT });
    onTestFinished(() => fake.close());
    const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
    onTestFinished(() => db.end());
    const dir = tempDir();
    onTestFinished(dir.remove);
    const children = new Map<string, DaemonChild>();
    onTestFailed(() => {
      for (const [name, c] of children) process.stderr.write(`--- node ${name}\n${c.out()}${c.err()}\n`);
    });
    onTestFinished(async () => {
      for (const c of children.values()) c.kill();
      await Promise.all([...children.values()].map((c) => c.exited));
    });
    const node = (name: string): DaemonChild => {
      mkdirSync(join(dir.path, name), { recursive: true });
      const { configFile } = writeDaemonConfig(join(dir.path, name), {
        service: { baseUrl: service.url },
        apiKey: service.key,
        instance: service.instanceIds[0] ?? "",
        channels: [
          {
            type: "line",
            id: "ln",
            channel_access_token: LINE_TOKEN,
            channel_secret: LINE_SECRET,
            api: fake.apiBase,
            data_api: fake.apiBase,
            http: { port: 0 },
            file_links: { public_base_url: `${tls.url}/line/files` },
            access: { users: [ALICE] },
          },
        ],
        extra: { logLevel: "info", state: { kind: "postgres", url: dbUrl, nodeId: name, leaseTtlMs: 2_000, pollMs: 200 } },
      });
      const child = startDaemonProcess(configFile);
      children.set(name, child);
      return child;
    };
    const lineEndpointOf = (child: DaemonChild): string | undefined =>
      [...`${child.out()}${child.err()}`.matchAll(/"url":"(http:\/\/127\.0\.0\.1:\d+)\/line\/webhook"/g)].map((m) => m[1] ?? "").at(-1);
    const holder = async (not?: string): Promise<string> => {
      let found = "";
      await waitUntil(
        async () => {
          const { rows } = await db.query("SELECT holder FROM lease WHERE unit = 'line:ln' AND expires_at > clock_timestamp()");
          found = (rows[0] as { holder: string | null } | undefined)?.holder ?? "";
          return found !== "" && found !== not;
        },
        "an owner of line:ln",
        30_000,
        50,
      );
      return found;
    };

    const a = node("a");
    await a.waitFor((o) => o.includes("daemon started"), "a started");
    const first = await holder();
    const b = node("b");
    await b.waitFor((o) => o.includes("daemon started"), "b started");
    const [owning, other] = first === "a" ? [a, b] : [b, a];
    await waitUntil(() => lineEndpointOf(other), "the other node's endpoint");
    behind = lineEndpointOf(other) ?? "";
    fake.setWebhookUrl(`${behind}/line/webhook`);

    await fake.say({ userId: ALICE }, "!file chart.png");
    await waitUntil(() => fake.messages(ALICE).some((m) => m.type === "image"), "the image message", 30_000);
    const imageUrl = fake.messages(ALICE).find((m) => m.type === "image")?.url ?? "";
    expect(imageUrl.startsWith(`${tls.url}/line/files/`)).toBe(true);
    const image = await fake.fetchMedia(imageUrl);
    expect(image.headers.get("content-type")).toBe("image/png");
    const bytes = Buffer.from(await image.arrayBuffer());
    expect(bytes.subarray(0, 4).toString("hex")).toBe(PNG_MAGIC);
    const part = await fake.fetchMedia(imageUrl, { headers: { range: "bytes=0-7" } });
    expect([part.status, Buffer.from(await part.arrayBuffer()).toString("hex")]).toEqual([206, bytes.subarray(0, 8).toString("hex")]);

    owning.kill();
    await owning.exited;
    const again = await fake.fetchMedia(imageUrl);
    expect(again.status).toBe(200);
    expect(Buffer.from(await again.arrayBuffer()).toString("hex")).toBe(bytes.toString("hex"));
    expect(await holder(first)).not.toBe(first);
  },
);
