/**
 * The web console in real Chromium (Debian's package, driven by
 * playwright-core): it loads, and every view follows what clients do through
 * the API live, without a reload. Waits are Playwright's auto-waiting
 * locators and expect polling: no sleeps.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { launchBrowser, textOf, UNTIL, type TestBrowser } from "../helpers/browser.js";
import { lacks } from "../helpers/system-programs.js";

const noChromium = lacks("chromium", import.meta.url);

let emulator: Emulator;
let url: string;
let browser: TestBrowser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  emulator = await createEmulator({ provisionMs: 0 });
  url = await emulator.listen(0, "127.0.0.1");
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.on("pageerror", (error) => pageErrors.push(error.message));
  // A blocked script or a Trusted Types violation is a console error, not a page error.
  page.on("console", (m) => void (m.type() === "error" && /Content Security Policy|Trusted ?Type/i.test(m.text()) && pageErrors.push(m.text())));
});
afterAll(async () => {
  await browser?.close();
  await emulator?.close();
});

async function call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** An organization (with a provider key) and one running instance, all through the API. */
async function orgWithInstance(name: string): Promise<{ key: string; instanceId: string }> {
  const signup = await call<{ api_key: string }>("POST", "/v1/organization/signup", { name });
  const key = signup.body.api_key;
  await call("PATCH", "/v1/organization", { model_api_keys: { anthropic: "sk-ant-browser-secret" } }, key);
  const created = await call<{ id: string; status: string }>("POST", "/v1/instances", { name: `${name}-agent` }, key);
  expect(created.status).toBe(201);
  return { key, instanceId: created.body.id };
}

/** Loads a console path as a new page and waits until its events stream is attached. */
async function load(path: string): Promise<void> {
  await page.goto(`${url}/_emulator/ui${path}`);
  await expect.poll(() => textOf(page.getByTestId("live-status")), UNTIL).toBe("live");
}

/**
 * Shows a console path. With the console already open, it moves there the way the
 * console's own links do (history and popstate, the stream kept); a page load costs
 * Chromium ten times the CPU. Loading a view from its own URL has a test of its own.
 */
async function open(path: string): Promise<void> {
  if (!page.url().startsWith(`${url}/_emulator/ui`)) return load(path);
  await page.evaluate(`history.pushState(null, "", ${JSON.stringify(`/_emulator/ui${path}`)}); dispatchEvent(new PopStateEvent("popstate"))`);
  await expect.poll(() => textOf(page.getByTestId("live-status")), UNTIL).toBe("live");
}

describe.skipIf(noChromium)("web console", () => {
  it("loads, says what to do when empty, and shows an instance created through the API without a reload", async () => {
    await load("/");
    await page.getByRole("heading", { level: 1, name: "Instances" }).first().waitFor({ state: "visible" });
    await page.getByText("No instances yet.").first().waitFor({ state: "visible" });
    await expect.poll(() => textOf(page.locator(".empty pre")), UNTIL).toContain("/v1/instances");

    const { instanceId } = await orgWithInstance("live");
    const row = page.locator(`tr[data-instance="${instanceId}"]`);
    await row.first().waitFor({ state: "visible" });
    await expect.poll(() => textOf(row), UNTIL).toContain("live-agent");
    await expect.poll(() => textOf(row), UNTIL).toContain("running");

    // The instance's own URL opens it directly.
    await row.getByRole("link", { name: "live-agent" }).click();
    await page.waitForURL(`${url}/_emulator/ui/instances/${instanceId}`);
    await expect.poll(() => textOf(page.getByTestId("instance-status")), UNTIL).toBe("running");
    expect(pageErrors).toEqual([]);
  });

  it("opens every kind of view from its own URL, path parameters and query included", async () => {
    const { key, instanceId } = await orgWithInstance("direct");
    const session = "support/7 ü";
    await call("POST", `/v1/instances/${instanceId}/session/${encodeURIComponent(session)}/responses`, { model: "m", input: "hello there" }, key);
    await call("PUT", `/v1/instances/${instanceId}/files/content`, { path: "workspace/direct.txt", content: "x" }, key);
    const views: [string, () => Promise<unknown>][] = [
      [`/instances/${instanceId}`, () => expect.poll(() => textOf(page.getByTestId("instance-status")), UNTIL).toBe("running")],
      [
        `/instances/${instanceId}/sessions/${encodeURIComponent(session)}`,
        () => expect.poll(() => textOf(page.locator("li.turn")), UNTIL).toContain("hello there"),
      ],
      [`/instances/${instanceId}/files?path=workspace`, () => page.getByRole("link", { name: "direct.txt" }).waitFor({ state: "visible" })],
      ["/requests?window=2", () => expect.poll(() => page.getByTestId("request-log").locator("tbody tr").count(), UNTIL).toBe(2)],
      ["/organizations", () => page.locator("article.card", { hasText: "direct" }).first().waitFor({ state: "visible" })],
    ];
    for (const [path, shown] of views) {
      await load(path);
      await shown();
    }
    expect(pageErrors).toEqual([]);
  });

  it("follows a session's conversation live as messages are sent through the API", async () => {
    const { key, instanceId } = await orgWithInstance("talk");
    await open(`/instances/${instanceId}/sessions/support-7`);
    await page.getByText("No turns in this session yet.").first().waitFor({ state: "visible" });

    const first = await call<{ id: string }>(
      "POST",
      `/v1/instances/${instanceId}/session/support-7/responses`,
      { model: "m", input: "where is my parcel?" },
      key,
    );
    expect(first.status).toBe(200);
    const turn = page.locator(`li.turn[data-response="${first.body.id}"]`);
    await expect.poll(() => textOf(turn), UNTIL).toContain("where is my parcel?");
    await expect.poll(() => textOf(turn), UNTIL).toContain("first turn");

    const second = await call<{ id: string }>("POST", `/v1/instances/${instanceId}/session/support-7/responses`, { model: "m", input: "and when?" }, key);
    const next = page.locator(`li.turn[data-response="${second.body.id}"]`);
    await expect.poll(() => textOf(next), UNTIL).toContain("and when?");
    await next.getByRole("link", { name: first.body.id }).first().waitFor({ state: "visible" });

    // A response id links to its chain.
    await next.getByRole("link", { name: second.body.id }).click();
    await expect.poll(() => textOf(page.getByRole("heading", { level: 1 })), UNTIL).toContain(second.body.id);
    await expect.poll(() => page.locator("li.turn").count(), UNTIL).toBe(2);
  });

  it("shows a turn's tool call and structured output readably, with the script rule that answered, live", async () => {
    const { key, instanceId } = await orgWithInstance("tools");
    const script = {
      rules: [
        {
          name: "weather call",
          match: { contains: "weather" },
          answer: { tool_calls: [{ name: "get_weather", arguments: { city: "Oslo" }, call_id: "call_w" }] },
        },
        { name: "forecast", match: { function_call_output: "call_w" }, answer: { output: { city: "Oslo", sky: "clear" } } },
      ],
    };
    expect((await call("PUT", `/_emulator/instances/${instanceId}/model-script`, script)).status).toBe(200);
    await open(`/instances/${instanceId}/sessions/weather`);
    await page.getByText("No turns in this session yet.").first().waitFor({ state: "visible" });

    const path = `/v1/instances/${instanceId}/session/weather/responses`;
    const asked = await call<{ id: string }>("POST", path, { model: "m", input: "weather in Oslo?" }, key);
    const callTurn = page.locator(`li.turn[data-response="${asked.body.id}"]`);
    await expect.poll(() => textOf(callTurn.locator('[data-item="function_call"]')), UNTIL).toContain("get_weather(");
    await expect.poll(() => textOf(callTurn.locator('[data-item="function_call"]')), UNTIL).toContain('"city": "Oslo"');
    await expect.poll(() => textOf(callTurn.getByTestId("rule")), UNTIL).toBe("rule: weather call");

    const answered = await call<{ id: string }>("POST", path, { model: "m", input: [{ type: "function_call_output", call_id: "call_w", output: "{}" }] }, key);
    const structured = page.locator(`li.turn[data-response="${answered.body.id}"] [data-item="structured"]`);
    await expect.poll(() => textOf(structured), UNTIL).toContain('"sky": "clear"');
    expect(pageErrors).toEqual([]);
  });

  it("adds a fault from the form, and the next message fails as the rule says", async () => {
    const { key, instanceId } = await orgWithInstance("faulty");
    await open("/faults");
    await page.getByText("No fault rules").first().waitFor({ state: "visible" });
    const form = page.getByRole("form", { name: "Add a fault rule" });
    await form.getByLabel("Target").selectOption("api");
    await form.getByLabel("Instance id").fill(instanceId);
    await form.getByLabel("Path prefix").fill(`/v1/instances/${instanceId}/session`);
    await form.getByLabel("Status", { exact: true }).fill("503");
    await form.getByLabel("Times").fill("1");
    await form.getByRole("button", { name: "Add rule" }).click();
    const rule = page.locator("tr[data-fault]");
    await expect.poll(() => rule.count(), UNTIL).toBe(1);
    await expect.poll(() => textOf(rule), UNTIL).toContain("HTTP 503");

    const failed = await call<{ detail: string }>("POST", `/v1/instances/${instanceId}/session/s/responses`, { model: "m", input: "hi" }, key);
    expect(failed).toEqual({ status: 503, body: { detail: "Injected fault (HTTP 503)." } });
    // Used up (times: 1): the rule leaves the list live, and the next message goes through.
    await expect.poll(() => rule.count(), UNTIL).toBe(0);
    expect((await call("POST", `/v1/instances/${instanceId}/session/s/responses`, { model: "m", input: "hi" }, key)).status).toBe(200);
  });

  it("draws the WhatsApp pairing QR after a connect, and Scan completes the pairing", async () => {
    const { key, instanceId } = await orgWithInstance("paired");
    await open(`/instances/${instanceId}/channels`);
    const whatsapp = page.locator('tr[data-channel="whatsapp"]');
    await expect.poll(() => textOf(whatsapp), UNTIL).toContain("no");
    expect((await call("POST", `/v1/instances/${instanceId}/channels/whatsapp/connect`, { config: {} }, key)).status).toBe(200);
    const qr = page.getByTestId("qr-whatsapp");
    await qr.first().waitFor({ state: "visible" });
    await expect
      .poll(
        () =>
          qr.evaluate((img) => {
            const image = img as unknown as { complete: boolean; naturalWidth: number };
            return image.complete ? image.naturalWidth : 0;
          }),
        UNTIL,
      )
      .toBeGreaterThan(50);
    await whatsapp.getByRole("button", { name: "Scan" }).click();
    await expect.poll(() => qr.count(), UNTIL).toBe(0);
    const status = await call<{ connected: boolean }>("GET", `/v1/instances/${instanceId}/channels/whatsapp/status`, undefined, key);
    expect(status.body.connected).toBe(true);
  });

  it("lists requests made through the API as they happen, with redacted bodies for the selected one", async () => {
    await open("/requests");
    const signup = await call<{ api_key: string }>("POST", "/v1/organization/signup", { name: "logged" });
    const key = signup.body.api_key;
    await call("GET", "/v1/instances", undefined, key);
    const log = page.getByTestId("request-log");
    const listRow = log.locator("tr", { hasText: "/v1/instances" }).filter({ hasText: "GET" }).first();
    await expect.poll(() => textOf(listRow), UNTIL).toContain("200");
    await expect.poll(() => textOf(listRow), UNTIL).toContain("org");

    const signupRow = log.locator("tr", { hasText: "/v1/organization/signup" }).first();
    await signupRow.click();
    const detail = page.getByTestId("request-detail");
    await expect.poll(() => textOf(detail), UNTIL).toContain('"name": "logged"');
    await expect.poll(() => textOf(detail), UNTIL).toContain('"api_key": "<redacted>"');
    expect(await page.content()).not.toContain(key);

    // Keyboard: the filter narrows the list, arrows move the selection.
    await page.getByLabel("Filter").fill("signup");
    await expect.poll(() => log.locator("tbody tr").count(), UNTIL).toBeGreaterThan(0);
    for (const text of await log.locator("tbody tr").allTextContents()) expect(text).toContain("signup");
  });

  it("keeps bounded windows: a long-open page holds only the newest rows", async () => {
    const { key, instanceId } = await orgWithInstance("bounded");
    await open(`/instances/${instanceId}/sessions/load?window=3`);
    const ids: string[] = [];
    for (let i = 1; i <= 6; i++) {
      ids.push((await call<{ id: string }>("POST", `/v1/instances/${instanceId}/session/load/responses`, { model: "m", input: `message ${i}` }, key)).body.id);
      await page
        .locator(`li.turn[data-response="${ids.at(-1)}"]`)
        .first()
        .waitFor({ state: "visible" });
    }
    await expect.poll(() => page.locator("li.turn").count(), UNTIL).toBe(3);
    await expect.poll(() => textOf(page.locator("li.turn").first()), UNTIL).toContain("message 4");

    await open("/requests?window=4");
    for (let i = 0; i < 8; i++) await call("GET", `/v1/organization?probe=${i}`, undefined, key);
    await expect.poll(() => textOf(page.getByTestId("request-log").locator("tbody tr").first()), UNTIL).toContain("/v1/organization");
    await expect.poll(() => page.getByTestId("request-log").locator("tbody tr").count(), UNTIL).toBe(4);
    expect(pageErrors).toEqual([]);
  });

  it("uploads, lists and deletes workspace files from the files view", async () => {
    const { key, instanceId } = await orgWithInstance("filer");
    await open(`/instances/${instanceId}/files?path=workspace`);
    await page.getByLabel("Upload into this folder").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hello files") });
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    const link = page.getByRole("link", { name: "notes.txt" });
    await link.waitFor({ state: "visible" });
    const read = await call<{ content: string }>("GET", `/v1/instances/${instanceId}/files/content?path=workspace/notes.txt`, undefined, key);
    expect(read.body.content).toBe("hello files");
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    expect(download.suggestedFilename()).toBe("notes.txt");

    await page.getByRole("button", { name: "Delete workspace/notes.txt" }).click();
    await page.getByRole("button", { name: "Yes" }).click();
    await expect.poll(() => link.count(), UNTIL).toBe(0);
    expect((await call("GET", `/v1/instances/${instanceId}/files/content?path=workspace/notes.txt`, undefined, key)).status).toBe(404);
  });

  it("steers lifecycle and plan from the keyboard: stop an instance, switch a tier", async () => {
    const { key, instanceId } = await orgWithInstance("steer");
    await open(`/instances/${instanceId}`);
    const stop = page.getByRole("button", { name: "Stop" });
    await stop.focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => textOf(page.getByTestId("instance-status")), UNTIL).toBe("stopped");
    expect((await call<{ status: string }>("GET", `/v1/instances/${instanceId}`, undefined, key)).body.status).toBe("stopped");

    // Navigation links are reachable and followable with the keyboard.
    await page.getByRole("link", { name: "Organizations" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(`${url}/_emulator/ui/organizations`);
    const org = page.locator("article.card", { hasText: "steer" });
    await org.getByLabel("Plan of steer").selectOption("crab");
    await org.getByRole("button", { name: "Switch" }).click();
    await expect.poll(() => textOf(org.locator("dd").nth(1)), UNTIL).toContain("1 of 10");
    expect((await call<{ subscription_tier: string }>("GET", "/v1/organization", undefined, key)).body.subscription_tier).toBe("crab");
  });

  it("fits a 420 px window (no sideways page scroll) and keeps table cells as cells", async () => {
    const { key, instanceId } = await orgWithInstance("narrow");
    await call("GET", `/v1/instances/${instanceId}/${"x".repeat(150)}`, undefined, key);
    await page.setViewportSize({ width: 420, height: 800 });
    try {
      await open("/requests");
      await page.locator("tr[data-id]").first().click();
      await page.getByTestId("request-detail").waitFor();
      const overflow = () => page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth");
      expect(await overflow()).toBe(0);
      await open(`/instances/${instanceId}/skills`);
      await page.getByTestId("skills").waitFor();
      const displays = await page.evaluate<string[]>(
        `[...new Set([...document.querySelectorAll("[data-testid=skills] td")].map((c) => getComputedStyle(c).display))]`,
      );
      expect(displays).toEqual(["table-cell"]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it("shows markup an API user chose (names, sessions, messages, files) as text, never as HTML", async () => {
    const xss = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`;
    const { key, instanceId } = await orgWithInstance("hostile");
    await call("PATCH", `/v1/instances/${instanceId}`, { name: `agent ${xss}` }, key);
    const session = `s"><svg onload=window.__xss=3>`;
    await call("POST", `/v1/instances/${instanceId}/session/${encodeURIComponent(session)}/responses`, { model: "m", input: xss }, key);
    await call("PUT", `/v1/instances/${instanceId}/files/content`, { path: `<img src=x onerror=window.__xss=4>.txt`, content: "x" }, key);
    for (const view of [`/instances/${instanceId}`, `/instances/${instanceId}/sessions/${encodeURIComponent(session)}`, `/instances/${instanceId}/files`]) {
      await open(view);
      await expect.poll(() => textOf(page.locator("main")), UNTIL).toContain(view.endsWith("/files") ? "onerror=window.__xss=4>.txt" : "<img src=x");
      expect(await page.locator("main img, main script, main svg").count()).toBe(0);
      expect(await page.evaluate<unknown>("window.__xss")).toBeUndefined();
    }
    expect(pageErrors).toEqual([]);
  });

  it("a page of another origin cannot reset the emulator: neither a form POST nor a no-cors fetch", async () => {
    const { instanceId } = await orgWithInstance("csrf-target");
    const { createServer } = await import("node:http");
    const target = `${url}/_emulator/reset`;
    const evil = createServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      res.end(
        `<script>fetch(${JSON.stringify(target)}, { method: "POST", mode: "no-cors" }).finally(() => document.forms[0].submit());</script><form method="POST" action="${target}"></form>`,
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    const answers: number[] = [];
    const onResponse = (r: { url(): string; status(): number }) => void (r.url() === target && answers.push(r.status()));
    page.on("response", onResponse);
    try {
      const port = (evil.address() as { port: number }).port;
      // localhost vs 127.0.0.1: another origin, and another site.
      await page.goto(`http://localhost:${port}/`);
      await expect.poll(() => answers.length, UNTIL).toBe(2);
      expect(answers).toEqual([403, 403]);
      const state = await call<{ instances: { id: string }[] }>("GET", "/_emulator/console/state");
      expect(state.body.instances.map((i) => i.id)).toContain(instanceId);
    } finally {
      page.off("response", onResponse);
      evil.closeAllConnections();
      await new Promise((resolve) => evil.close(resolve));
    }
  });

  it("hidden tabs let go of their stream, so a seventh console tab still loads (six connections per origin)", async () => {
    const hide = `Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" }); document.dispatchEvent(new Event("visibilitychange"));`;
    const tabs: Page[] = [];
    try {
      // Six tabs opened side by side (one after another only took longer): while some hold a
      // connection, another may wait for one until a tab is hidden and lets go of its own.
      await Promise.all(
        Array.from({ length: 6 }, async () => {
          const tab = await browser.context.newPage();
          tabs.push(tab);
          await tab.goto(`${url}/_emulator/ui/instances`);
          await expect.poll(() => textOf(tab.getByTestId("live-status")), UNTIL).toBe("live");
          await tab.evaluate(hide); // the user switched to another tab
          await expect.poll(() => textOf(tab.getByTestId("live-status")), UNTIL).toBe("paused");
        }),
      );
      const seventh = await browser.context.newPage();
      tabs.push(seventh);
      await seventh.goto(`${url}/_emulator/ui/requests`);
      await expect.poll(() => textOf(seventh.getByTestId("live-status")), UNTIL).toBe("live");
      // A tab shown again reconnects and loads its view again.
      await tabs[0]!.evaluate(
        `Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "visible" }); document.dispatchEvent(new Event("visibilitychange"));`,
      );
      await expect.poll(() => textOf(tabs[0]!.getByTestId("live-status")), UNTIL).toBe("live");
    } finally {
      for (const tab of tabs) await tab.close();
    }
  });

  it("a confirmation from the keyboard: focus lands on Cancel, Escape cancels, focus returns to the button", async () => {
    await open("/snapshot");
    const reset = page.getByRole("button", { name: "Reset…" });
    const focused = () => page.evaluate<string>("document.activeElement?.textContent ?? ''");
    await reset.focus();
    await page.keyboard.press("Enter");
    await expect.poll(focused, UNTIL).toBe("Cancel");
    await page.keyboard.press("Escape");
    await expect.poll(focused, UNTIL).toBe("Reset…");
    await page.keyboard.press("Enter");
    await expect.poll(focused, UNTIL).toBe("Cancel");
    await page.keyboard.press("Enter"); // a second Enter cancels: it never lands on Yes
    await expect.poll(focused, UNTIL).toBe("Reset…");
    expect((await call<{ instances: unknown[] }>("GET", "/_emulator/console/state")).body.instances.length).toBeGreaterThan(0);

    // Forcing `terminated` deletes the instance: it asks first, like Delete.
    const { instanceId } = await orgWithInstance("forced");
    await open(`/instances/${instanceId}`);
    await page.getByLabel("Force state").selectOption("terminated");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect.poll(focused, UNTIL).toBe("Cancel");
    await page.keyboard.press("Escape");
    await expect.poll(() => textOf(page.getByTestId("instance-status")), UNTIL).toBe("running");
    const still = await call<{ instances: { id: string }[] }>("GET", "/_emulator/console/state");
    expect(still.body.instances.map((i) => i.id)).toContain(instanceId);
  });

  // Last: it wipes the emulator.
  it("exports a snapshot, resets after a confirmation, and imports the snapshot back", async () => {
    const { instanceId } = await orgWithInstance("kept");
    await open("/snapshot");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download snapshot" }).click()]);
    const file = await download.path();
    const { readFileSync } = await import("node:fs");
    const exported = JSON.parse(readFileSync(file, "utf8")) as { instances: Record<string, unknown> };
    expect(Object.keys(exported.instances)).toContain(instanceId);

    await page.getByRole("button", { name: "Reset…" }).click();
    await page.getByRole("button", { name: "Cancel" }).click();
    expect((await call<{ instances: unknown[] }>("GET", "/_emulator/console/state")).body.instances.length).toBeGreaterThan(0);
    await page.getByRole("button", { name: "Reset…" }).click();
    await page.getByRole("button", { name: "Yes" }).click();
    await page.getByText("The emulator was reset.").waitFor();
    expect((await call<{ instances: unknown[] }>("GET", "/_emulator/console/state")).body.instances).toEqual([]);

    await page.getByLabel("Snapshot file").setInputFiles(file);
    await page.getByText(/^Imported /).waitFor();
    const back = await call<{ instances: { id: string }[] }>("GET", "/_emulator/console/state");
    expect(back.body.instances.map((i) => i.id)).toContain(instanceId);
  });
  // After the snapshot test: it resets the emulator too.
  it("a conversation left open follows a reset made elsewhere (it is gone) and a snapshot import (it is back)", async () => {
    const { key, instanceId } = await orgWithInstance("reopened");
    const sent = await call<{ id: string }>("POST", `/v1/instances/${instanceId}/session/s1/responses`, { model: "m", input: "remember me" }, key);
    await open(`/instances/${instanceId}/sessions/s1`);
    const turn = page.locator(`li.turn[data-response="${sent.body.id}"]`);
    await expect.poll(() => textOf(turn), UNTIL).toContain("remember me");
    const saved = await call("GET", "/_emulator/snapshot");

    expect((await call("POST", "/_emulator/reset")).status).toBe(204);
    await expect.poll(() => turn.count(), UNTIL).toBe(0);
    await expect.poll(() => textOf(page.getByRole("alert")), UNTIL).toContain("not found");

    expect((await call("PUT", "/_emulator/snapshot", saved.body)).status).toBe(204);
    await expect.poll(() => textOf(turn), UNTIL).toContain("remember me");
    expect(pageErrors).toEqual([]);
  });
});
