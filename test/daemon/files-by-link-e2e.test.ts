/**
 * Files back to LINE and Google Chat through the whole chain: the fake model's
 * `!file NAME` writes a file into the instance's workspace and names it; the
 * daemon downloads it and hands it to the adapter the daemon built, which keeps
 * it behind an expiring link on the channel's own endpoint
 * (`file_links.public_base_url`) and sends the platform that URL: a LINE image
 * message, the link as text for a report, a Google Chat card. Each URL is then
 * fetched as the platform's servers (or a person's browser) would: for LINE
 * over real TLS through the reverse proxy in front of the bridge
 * (test/helpers/tls-proxy.ts), the certificate verified. Without a public_base_url the
 * chat is told the file stays in the workspace, as before.
 */
import { expect, it, onTestFinished } from "vitest";
import type { LineChannelConfig } from "../../daemon/adapters/line/config.js";
import { createLineAdapter } from "../../daemon/adapters/line/index.js";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeLine } from "../fakes/line.js";
import { TEST_TLS_CERT } from "../fakes/tls-test-cert.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { fakeGoogleChatForTest, startGoogleChatDaemon } from "../helpers/googlechat-setup.js";
import { startTlsProxy } from "../helpers/tls-proxy.js";
import { waitUntil } from "../helpers/wait.js";

const LINE_TOKEN = "e2eLineChannelAccessTokenThatMustStaySecret0123456789abcdef==";
const LINE_SECRET = "00112233445566778899aabbccddeeff";
const ALICE = `U${"5".repeat(32)}`;
const PROJECT = "246813579024";
const PNG_MAGIC = "89504e47";

async function lineBridge(fileLinks: (publicBase: string) => Record<string, unknown>) {
  const service = await startServiceFixture("files-link-line-");
  let endpoint = "";
  const tls = await startTlsProxy(() => endpoint);
  onTestFinished(() => tls.close());
  const fake = await createFakeLine({ channelAccessToken: LINE_TOKEN, channelSecret: LINE_SECRET, trustedCa: TEST_TLS_CERT });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "line",
    id: "ln",
    channel_access_token: LINE_TOKEN,
    channel_secret: LINE_SECRET,
    api: fake.apiBase,
    data_api: fake.apiBase,
    http: { port: 0 },
    file_links: fileLinks(tls.url),
    access: { users: [ALICE] },
  });
  const daemon = createDaemon({
    config,
    random: seededRandom(21),
    createAdapter: (c, deps) =>
      c.type === "line"
        ? Promise.resolve(
            createLineAdapter(c as LineChannelConfig, deps, {
              onListening: (url) => {
                endpoint = url;
                fake.setWebhookUrl(`${url}/line/webhook`);
              },
            }),
          )
        : undefined,
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { fake, daemon };
}

it("LINE: a picture the agent made arrives as an image message LINE fetches, a report as its link; each once", async () => {
  const { fake, daemon } = await lineBridge((base) => ({ public_base_url: `${base}/line/files` }));
  await fake.say({ userId: ALICE }, "!file chart.png");
  await waitUntil(() => fake.messages(ALICE).some((m) => m.type === "image"), "the image message");
  await fake.say({ userId: ALICE }, "!file report.pdf");
  await waitUntil(() => fake.messages(ALICE).some((m) => m.text?.startsWith("📎 report.pdf")), "the report's link");
  await daemon.whenIdle();
  const sent = fake.messages(ALICE);
  expect(sent.map((m) => m.type)).toEqual(["text", "image", "text", "text"]);
  expect(sent[0]?.text).toBe("Here is chart.png.");
  const image = await fake.fetchMedia(sent[1]?.url ?? "");
  expect(image.headers.get("content-type")).toBe("image/png");
  expect(
    Buffer.from(await image.arrayBuffer())
      .subarray(0, 4)
      .toString("hex"),
  ).toBe(PNG_MAGIC);
  const link = /https:\S+/.exec(sent[3]?.text ?? "")?.[0] ?? "";
  const report = await fake.fetchMedia(link);
  expect(
    Buffer.from(await report.arrayBuffer())
      .subarray(0, 5)
      .toString(),
  ).toBe("%PDF-");
});

it("LINE without public_base_url: the chat is told the file stays in the agent's workspace", async () => {
  const { fake, daemon } = await lineBridge(() => ({}));
  await fake.say({ userId: ALICE }, "!file chart.png");
  await waitUntil(() => fake.messages(ALICE).length === 2, "the reply and the notice");
  await daemon.whenIdle();
  expect(fake.messages(ALICE).map((m) => m.text)).toEqual([
    "Here is chart.png.",
    "(The agent made workspace/chart.png; this chat cannot receive files, so it stays in the agent's workspace.)",
  ]);
});

it("Google Chat: the file arrives as a card whose Download button (and image) give its bytes", async () => {
  const service = await startServiceFixture("files-link-gc-");
  const fake = await fakeGoogleChatForTest(PROJECT);
  let endpoint = "";
  const daemon = await startGoogleChatDaemon({
    service,
    fake,
    project: PROJECT,
    seed: 22,
    settings: {
      streaming: "off",
      syncReplyMs: 0,
      file_links: { public_base_url: "https://bridge.example.com/googlechat/files" },
      access: { users: ["users/alice"] },
    },
    onListening: (url) => {
      endpoint = url;
    },
  });
  const bot = () => fake.messages("spaces/dm-alice").filter((m) => m.sender.type === "BOT");
  await fake.say({ space: "spaces/dm-alice", text: "!file chart.png" }).answered;
  await waitUntil(() => bot().some((m) => m.cardsV2), "the file's card");
  await daemon.whenIdle();
  const [text, card] = bot();
  expect(text?.text).toBe("Here is chart.png.");
  const widgets = (card?.cardsV2 ?? []).flatMap((c) => c.card?.sections ?? []).flatMap((s) => s.widgets ?? []);
  const url = widgets.flatMap((w) => w.buttonList?.buttons ?? [])[0]?.onClick?.openLink?.url ?? "";
  expect(widgets[0]?.image?.imageUrl).toBe(url);
  const got = await fetch(url.replace("https://bridge.example.com", endpoint));
  expect(
    Buffer.from(await got.arrayBuffer())
      .subarray(0, 4)
      .toString("hex"),
  ).toBe(PNG_MAGIC);
});
