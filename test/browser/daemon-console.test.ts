/**
 * The daemon's operator console in real Chromium (Debian's package, driven by
 * playwright-core), against a running daemon with a Telegram channel on the
 * Bot API fake (grammY over real HTTP) and the emulator as the service: the
 * token is required and a wrong one refused; an operator approves a pairing
 * code the page never showed; a turn appears live and its chat shows its
 * text; a fresh session started from the page is what the agent sees next;
 * and no secret reaches the page, its responses or its event stream. Waits
 * are Playwright's locators and expect polling: no sleeps.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { Page } from "playwright-core";
import { pino } from "pino";
import { beforeAll, describe, expect, it } from "vitest";
import { checkOffline } from "../../daemon/config/reload.js";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { daemonConfigSchema } from "../../daemon/config/schema.js";
import { createWhatsAppAdapter } from "../../daemon/adapters/whatsapp/index.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeBaileys, type FakeBaileys } from "../fakes/baileys-socket.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { waitUntil } from "../helpers/wait.js";
import { launchBrowser, textOf, UNTIL, type TestBrowser } from "../helpers/browser.js";
import { openSse, type SseReader } from "../helpers/sse-client.js";
import { OpsChat, OpsChats, OpsEvent, OpsLinks, OpsOverview, OpsPairing } from "../../shared/schemas/ops-console.js";
import { lacks } from "../helpers/system-programs.js";

const noChromium = lacks("chromium", import.meta.url);

const OPS_TOKEN = "ops-browser-token-7c41b9e2d0";
const BOT_TOKEN = "987654321:BrowserSecretBotTokenAAAAAAAAAAAAAA";
const stranger = { id: 7001, username: "stranger" };
const CODE = /pairing code is ([A-Z2-9]{8})/;

let service: ServiceFixture;
let fake: FakeTelegram;
/** The WhatsApp channel's linked device. */
let phone: FakeBaileys;
let daemon: Daemon;
let url: string;
let apiKey: string;
let browser: TestBrowser;
let page: Page;
let events: SseReader;
/** The daemon's config file (what a reload reads), and the config in it. */
let configFile: string;
let fileConfig: Record<string, unknown>;
const logLines: string[] = [];
const pageErrors: string[] = [];
/** Every response body the page loaded (the event stream is read beside it, in `events`). */
const bodies: { url: string; body: string }[] = [];
/** Every pairing code and WhatsApp link code handed out during the test: secrets the page must never show as text. */
const codes: string[] = [];

// File-wide: each beforeAll returns its release, which the runner calls after the last test (last made, first released).
beforeAll(async () => {
  const fixture = await openServiceFixture("daemon-console-");
  service = fixture;
  return fixture.close;
});
beforeAll(async () => {
  fake = await createFakeTelegram({ token: BOT_TOKEN });
  return () => fake.close();
});
beforeAll(() => {
  const configDir = mkdtempSync(join(tmpdir(), "daemon-console-config-"));
  configFile = join(configDir, "daemon.json");
  return () => rmSync(configDir, { recursive: true, force: true });
});
beforeAll(() => {
  const base = service.configFor({ type: "terminal" });
  apiKey = base.service.apiKey;
  fileConfig = {
    service: base.service,
    dataDir: base.dataDir,
    logLevel: "silent",
    ops: { port: 0, token: OPS_TOKEN },
    queue: { debounceMs: 0 },
    routes: [{ instance: service.instanceId }],
    channels: [
      { type: "telegram", id: "tg", token: BOT_TOKEN, apiRoot: fake.url, streaming: "off", access: { mode: "pairing" } },
      { type: "whatsapp", id: "wa" },
    ],
  };
  const config = daemonConfigSchema.parse(fileConfig);
  writeFileSync(configFile, JSON.stringify(fileConfig));
  phone = createFakeBaileys();
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  daemon = createDaemon({
    config,
    logger: pino({ level: "info" }, { write: (l: string) => void logLines.push(l) }),
    createAdapter: (channel, deps) =>
      channel.type === "whatsapp"
        ? Promise.resolve(createWhatsAppAdapter(channel, deps, { socketFactory: phone.factory, qrOutput: quiet, random: seededRandom(5) }))
        : undefined,
    reloadFrom: () => checkOffline(configFile, {}),
  });
  return () => daemon.stop({ graceMs: 0 });
});
beforeAll(async () => {
  const started = daemon.start();
  // The WhatsApp channel starts linked: its first socket opens.
  await waitUntil(() => phone.sockets.length === 1, "the WhatsApp channel's first socket");
  phone.latest().open();
  // Linked: the device's identity is in the stored creds.
  phone.latest().updateCreds({ me: { id: "4915100000001:7@s.whatsapp.net", name: "Agent" } });
  await started;
  url = daemon.opsUrl!;
});
beforeAll(async () => {
  events = await openSse(`${url}/ui/api/events`, { authorization: `Bearer ${OPS_TOKEN}` });
  return () => events.close();
});
beforeAll(async () => {
  browser = await launchBrowser();
  return () => browser.close();
});
beforeAll(async () => {
  page = await browser.context.newPage();
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (m) => void (m.type() === "error" && /Content Security Policy|Trusted ?Type/i.test(m.text()) && pageErrors.push(m.text())));
  page.on("response", (response) => {
    if ((response.headers()["content-type"] ?? "").includes("event-stream")) return;
    void response.text().then(
      (body) => bodies.push({ url: response.url(), body }),
      () => undefined, // a redirect has no body
    );
  });
});

/** Sends `text` as `user` and resolves with the next message the bot sends them. */
async function ask(user: { id: number; username: string }, text: string): Promise<string> {
  const before = fake.sentMessages(user.id).length;
  fake.privateText(user, text);
  await fake.waitFor(() => fake.sentMessages(user.id).length > before);
  return fake.sentMessages(user.id).at(-1)!.text;
}

/** Moves to a console path the way its own links do (the stream kept). */
async function open(path: string): Promise<void> {
  await page.evaluate(`history.pushState(null, "", ${JSON.stringify(`/ui${path}`)}); dispatchEvent(new PopStateEvent("popstate"))`);
  await expect.poll(() => textOf(page.getByTestId("live-status")), UNTIL).toBe("live");
}

describe.skipIf(noChromium)("the operator's console", () => {
  it("requires the token: without it and with a wrong one the page is refused; the right one opens it and leaves the address", async () => {
    const none = await page.goto(`${url}/ui/`);
    expect(none?.status()).toBe(401);
    expect(await page.locator("body").innerText()).toContain("needs the ops token");
    const wrong = await page.goto(`${url}/ui/?token=not-the-ops-token-at-all`);
    expect(wrong?.status()).toBe(401);
    expect(await page.locator("body").innerText()).toContain("not the ops token");

    await page.goto(`${url}/ui/?token=${OPS_TOKEN}`);
    expect(page.url()).toBe(`${url}/ui/`);
    await expect.poll(() => textOf(page.getByTestId("live-status")), UNTIL).toBe("live");
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ state: "visible" });
    await expect.poll(() => textOf(page.locator('tr[data-channel="tg"]')), UNTIL).toContain("connected");
    await expect.poll(() => textOf(page.getByTestId("queues")), UNTIL).toContain("running");
  });

  it("shows a refused reload's problems in the overview, live, and a good reload clears them", async () => {
    await open("/overview");
    expect(await page.getByTestId("config-reload").count()).toBe(0);
    // A mistake in the file: the value given must not be echoed (it could be a secret in the wrong place).
    const bad = structuredClone(fileConfig) as { channels: { access?: { mode: string } }[] };
    bad.channels[0]!.access = { mode: "misplaced-SECRET-5f3a" };
    writeFileSync(configFile, JSON.stringify(bad));
    expect((await daemon.reload()).ok).toBe(false);
    const refused = page.getByTestId("config-reload");
    await expect.poll(() => textOf(refused), UNTIL).toContain("The last config reload was refused");
    await expect.poll(() => textOf(page.getByTestId("config-problem").first()), UNTIL).toMatch(/channels.*access\.mode/);
    expect(await page.content()).not.toContain("misplaced-SECRET");
    expect(logLines.some((l) => l.includes("config reload refused"))).toBe(true);

    writeFileSync(configFile, JSON.stringify(fileConfig));
    const good = await daemon.reload();
    expect(good.ok).toBe(true);
    await expect.poll(() => textOf(refused), UNTIL).toContain(`Config unchanged (hash ${good.ok ? good.hash : ""})`);
    expect(await page.getByTestId("config-problem").count()).toBe(0);
    expect(await page.getByTestId("config-differ").count()).toBe(0);
  });

  it("approves a pairing code the page never showed, naming the operator in the list and the log", async () => {
    await open("/pairing");
    const first = await ask(stranger, "hello, may I talk to the agent?");
    const code = CODE.exec(first)?.[1];
    expect(code).toBeDefined();
    codes.push(code!);
    // The waiting request appears live, without its code.
    const waiting = page.locator(`li[data-waiting="${stranger.id}"]`);
    await expect.poll(() => textOf(waiting), UNTIL).toContain("stranger");
    expect(await page.content()).not.toContain(code);

    await page.getByLabel("Your name (for the log)").fill("alice");
    await page.getByLabel("Code").fill(code!.toLowerCase());
    await page.getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => textOf(page.getByTestId("approve-result")), UNTIL).toContain("Approved stranger");
    await expect.poll(() => textOf(page.locator(`li[data-approved="${stranger.id}"]`)), UNTIL).toContain("by console:alice@127.0.0.1");
    await fake.waitFor(() => fake.sentMessages(stranger.id).some((m) => m.text.includes("The owner approved you")));
    expect(logLines.some((l) => l.includes("pairing approved from the console") && l.includes('"by":"console:alice@127.0.0.1"'))).toBe(true);

    // A wrong code is refused in the page and changes nothing.
    await page.getByLabel("Code").fill("WRONGCOD");
    await page.getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => textOf(page.locator(".approve .error")), UNTIL).toContain("matches no waiting request");
  });

  it("keeps a row's state on its row when another row goes (every list is keyed)", async () => {
    const [second, third] = [
      { id: 7002, username: "second" },
      { id: 7003, username: "third" },
    ];
    for (const person of [second, third]) {
      const code = CODE.exec(await ask(person, "hello"))?.[1];
      codes.push(code!);
      const approved = await fetch(`${url}/ui/api/pairing/approve`, {
        method: "POST",
        headers: { authorization: `Bearer ${OPS_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ channel: "tg", code }),
      });
      expect(approved.status).toBe(200);
    }
    await open("/pairing");
    const row = (person: { id: number }) => page.locator(`li[data-approved="${person.id}"]`);
    await row(third).waitFor({ state: "visible" });
    // The third's revoke fails (the network answers for the daemon, once): its row shows the error.
    await page.route("**/ui/api/pairing/revoke", (route) =>
      route.fulfill({ status: 500, contentType: "application/json", body: JSON.stringify({ detail: "Injected failure for row 7003." }) }),
    );
    await row(third).getByRole("button", { name: "Revoke" }).click();
    await row(third).getByRole("button", { name: "Yes" }).click();
    await expect.poll(() => textOf(row(third).getByRole("alert")), UNTIL).toBe("Injected failure for row 7003.");
    await page.unroute("**/ui/api/pairing/revoke");
    // The row above it goes (revoked elsewhere, the list reloads live): the error stays with the third, and only there.
    const revoked = await fetch(`${url}/ui/api/pairing/revoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPS_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ channel: "tg", user: String(second.id) }),
    });
    expect(revoked.status).toBe(200);
    await expect.poll(() => row(second).count(), UNTIL).toBe(0);
    expect(await textOf(row(third).getByRole("alert"))).toBe("Injected failure for row 7003.");
    expect(await page.locator("li[data-approved] [role=alert]").count()).toBe(1);
    // And now it goes for real.
    await row(third).getByRole("button", { name: "Revoke" }).click();
    await row(third).getByRole("button", { name: "Yes" }).click();
    await expect.poll(() => row(third).count(), UNTIL).toBe(0);
  });

  it("plots the last hour on the overview, and the plots gain a point live after a turn", async () => {
    await open("/overview");
    const latency = page.getByTestId("median-latency-plot");
    const turns = page.getByTestId("turns-per-minute-plot");
    await latency.waitFor({ state: "visible" });
    const before = Number(await latency.getAttribute("data-points"));
    const turnsBefore = Number(await turns.getAttribute("data-points"));
    expect(await ask(stranger, "how is the weather?")).toBe("You said: how is the weather?");
    await expect.poll(async () => Number(await latency.getAttribute("data-points")), UNTIL).toBe(before + 1);
    await expect.poll(async () => Number(await turns.getAttribute("data-points")), UNTIL).toBe(turnsBefore + 1);
    expect(await latency.getAttribute("aria-label")).toMatch(/^Latency over the last (hour|\d+ min): \d+ points, latest [\d.]+ s/);
    // The queue moved for that turn too.
    expect(Number(await page.getByTestId("queue-depth-plot").getAttribute("data-points"))).toBeGreaterThan(0);
  });

  it("shows a turn appear live, its chat with its text, and starts a fresh session the agent sees", async () => {
    await open("/activity");
    expect(await ask(stranger, "where is my parcel?")).toBe("You said: where is my parcel?");
    await page.locator('li[data-type="delivered"]').first().waitFor({ state: "visible" });
    await expect.poll(() => textOf(page.locator('li[data-type="delivered"]')), UNTIL).toMatch(/reply delivered to Telegram \(7001\) after [\d.]+ s/);
    // Live activity names chats, never what they said.
    expect(await page.getByTestId("activity").innerText()).not.toContain("parcel");

    await open("/chats");
    const row = page.locator(`tr[data-chat="${stranger.id}"]`);
    await expect.poll(() => textOf(row), UNTIL).toContain("#0");
    // Named as a person would say it, here as everywhere chats are listed.
    expect(await textOf(row.getByRole("link"))).toBe("Telegram (7001)");
    await row.getByRole("link").click();
    await expect.poll(() => textOf(page.getByTestId("chat-name")), UNTIL).toBe("Telegram (7001)");
    const turn = page.locator("li.turn", { hasText: "where is my parcel?" });
    await expect.poll(() => textOf(turn), UNTIL).toContain("You said: where is my parcel?");
    await expect.poll(() => textOf(turn), UNTIL).toContain("delivered after");
    await expect.poll(() => textOf(page.getByTestId("session")), UNTIL).not.toContain("(new)");

    await page.getByRole("button", { name: "Start a fresh session" }).click();
    await expect
      .poll(() => textOf(page.getByRole("group", { name: "Confirm" })), UNTIL)
      .toContain("Start a fresh session for Telegram (7001)? The agent forgets this conversation.");
    await page.getByRole("button", { name: "Yes" }).click();
    await expect.poll(() => textOf(page.getByTestId("fresh-session")), UNTIL).toContain("New session");
    await expect.poll(() => textOf(page.getByTestId("session")), UNTIL).toContain("#1 (new)");
    expect(logLines.some((l) => l.includes("conversation reset from the console") && l.includes('"by":"console:alice@127.0.0.1"'))).toBe(true);
    // The agent no longer sees what was said before.
    expect(await ask(stranger, "!recall")).toBe("(nothing yet)");
    // And the new turn shows up in the open chat without a reload.
    await expect.poll(() => textOf(page.locator("li.turn", { hasText: "!recall" })), UNTIL).toContain("(nothing yet)");
  });

  it("re-links WhatsApp: the link is forgotten, the QR code shows in the page, live, and goes once the phone scans it", async () => {
    await open("/whatsapp");
    const card = page.locator('article[data-link="wa"]');
    await expect.poll(() => textOf(card.getByTestId("link-state")), UNTIL).toBe("connected");
    expect(await card.locator("img.qr").count()).toBe(0);

    // It asks first, saying what it will do; Cancel changes nothing.
    await card.getByRole("button", { name: /Re-link/ }).click();
    const question = card.getByRole("group", { name: "Confirm" });
    await expect.poll(() => textOf(question), UNTIL).toContain("Re-link wa? It forgets its WhatsApp link");
    await question.getByRole("button", { name: "Cancel" }).click();
    await card.getByRole("button", { name: /Re-link/ }).waitFor({ state: "visible" });
    expect(phone.sockets.length).toBe(1);
    expect(logLines.some((l) => l.includes("re-link asked from the console"))).toBe(false);
    await card.getByRole("button", { name: /Re-link/ }).click();
    await question.getByRole("button", { name: "Yes" }).click();
    // The old connection ends and a new one, without the link, asks to be scanned.
    await expect.poll(() => phone.sockets.length, UNTIL).toBe(2);
    expect(phone.sockets[0]!.closed).toBe(true);
    expect(phone.sockets[0]!.config.auth.creds.me?.id).toBe("4915100000001:7@s.whatsapp.net");
    expect(phone.latest().config.auth.creds.me).toBeUndefined();
    codes.push(phone.latest().showQr());
    const qr = card.getByRole("img", { name: "QR code to link wa" });
    await qr.waitFor({ state: "visible" });
    expect(await qr.getAttribute("src")).toMatch(/^data:image\/svg\+xml;base64,/);
    await expect.poll(() => textOf(card.getByTestId("link-state")), UNTIL).toBe("pairing");
    await expect.poll(() => textOf(page.getByTestId("relink-result")), UNTIL).toContain("forgot its link");
    expect(logLines.some((l) => l.includes("re-link asked from the console") && l.includes('"by":"console:alice@127.0.0.1"'))).toBe(true);

    // A new code replaces the shown one (WhatsApp rotates them), then the phone scans it.
    codes.push(phone.latest().showQr(`2@rotated,${"k".repeat(40)}=`));
    phone.latest().open();
    await expect.poll(() => textOf(card.getByTestId("link-state")), UNTIL).toBe("connected");
    expect(await card.locator("img.qr").count()).toBe(0);
  });

  it("revokes an approval from the page: the person is asked to pair again, and the log says who revoked", async () => {
    await open("/pairing");
    const approved = page.locator(`li[data-approved="${stranger.id}"]`);
    const revokesLogged = () => logLines.filter((l) => l.includes("pairing revoke from the console") && l.includes('"userId":"7001"')).length;
    await approved.getByRole("button", { name: "Revoke" }).click();
    const question = approved.getByRole("group", { name: "Confirm" });
    await expect.poll(() => textOf(question), UNTIL).toContain("Revoke pairing of stranger (7001) on tg? They will have to pair again.");
    expect(await question.getByRole("button").allInnerTexts()).toEqual(["Yes", "Cancel"]);
    // Asked, not done: the person is still approved until the operator says yes.
    expect(revokesLogged()).toBe(0);
    await question.getByRole("button", { name: "Yes" }).click();
    await expect.poll(() => approved.count(), UNTIL).toBe(0);
    expect(logLines.some((l) => l.includes("pairing revoke from the console") && l.includes('"by":"console:alice@127.0.0.1"'))).toBe(true);
    const again = await ask(stranger, "am I still in?");
    const code = CODE.exec(again)?.[1];
    expect(code).toBeDefined();
    codes.push(code!);
    await expect.poll(() => textOf(page.locator(`li[data-waiting="${stranger.id}"]`)), UNTIL).toContain("stranger");
  });

  it("never lets a secret reach the page: not in any view, any response it loaded, nor its event stream", async () => {
    for (const path of ["/overview", "/pairing", "/chats", "/activity", "/whatsapp"]) {
      await open(path);
      await page.getByRole("heading", { level: 1 }).first().waitFor({ state: "visible" });
      const dom = await page.content();
      for (const secret of [OPS_TOKEN, BOT_TOKEN, apiKey, ...codes]) expect(dom, path).not.toContain(secret);
    }
    expect(codes.length).toBeGreaterThan(0);
    expect(bodies.length).toBeGreaterThan(5);
    for (const { url: from, body } of bodies) for (const secret of [OPS_TOKEN, BOT_TOKEN, apiKey, ...codes]) expect(body, from).not.toContain(secret);
    expect(events.text).toContain("event: delivered");
    for (const secret of [OPS_TOKEN, BOT_TOKEN, apiKey, ...codes]) expect(events.text).not.toContain(secret);
    expect(events.text).not.toContain("parcel");
    // Nor the log.
    for (const secret of [OPS_TOKEN, BOT_TOKEN, apiKey, ...codes]) expect(logLines.join("")).not.toContain(secret);
    expect(pageErrors).toEqual([]);
  });

  it("reads every answer the page loaded with the schemas the server sends them by", () => {
    const schemaOf = (path: string) =>
      path === "/ui/api/overview"
        ? OpsOverview
        : path === "/ui/api/pairing"
          ? OpsPairing
          : path === "/ui/api/chats"
            ? OpsChats
            : /^\/ui\/api\/chats\/[^/]+$/.test(path)
              ? OpsChat
              : path === "/ui/api/links"
                ? OpsLinks
                : undefined;
    const read = bodies.filter((b) => new URL(b.url).pathname.startsWith("/ui/api/") && b.body.startsWith("{"));
    const seen = new Set<string>();
    for (const { url: from, body } of read) {
      const schema = schemaOf(new URL(from).pathname);
      const parsed: unknown = JSON.parse(body);
      if (!schema || (typeof parsed === "object" && parsed !== null && "detail" in parsed)) continue;
      expect(schema.safeParse(parsed).success, from).toBe(true);
      seen.add(schema === OpsChat ? "chat" : new URL(from).pathname);
    }
    expect([...seen].sort()).toEqual(["/ui/api/chats", "/ui/api/links", "/ui/api/overview", "/ui/api/pairing", "chat"]);
    // And the events, each chat named as the lists name it.
    const carried = events.frames.filter((f) => f.event !== undefined && f.event !== "hello" && f.event !== "overflow");
    expect(carried.length).toBeGreaterThan(5);
    for (const frame of carried) expect(OpsEvent.safeParse(JSON.parse(frame.data!)).success, frame.data).toBe(true);
    const delivered = carried.find((f) => f.event === "delivered");
    expect(OpsEvent.parse(JSON.parse(delivered!.data!))).toMatchObject({ chat: { name: "Telegram (7001)" } });
  });
});
