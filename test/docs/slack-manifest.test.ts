/**
 * The Slack app manifest in docs/platforms.md is what an operator pastes to
 * create the app: it must ask for every scope the bridge can use (the list
 * `agent-bridge check` holds a token to), subscribe to the events the bridge
 * reads, turn interactivity on for buttons, and name the `/agent` command,
 * all at the one URL the bridge's endpoint serves.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { load as loadYaml } from "js-yaml";
import { expect, it } from "vitest";
import { scopesNeeded, slackChannelSchema } from "../../daemon/adapters/slack/config.js";

const root = resolve(import.meta.dirname, "../..");

interface Manifest {
  features: { slash_commands: { command: string; url: string }[] };
  oauth_config: { scopes: { bot: string[] } };
  settings: { event_subscriptions: { request_url: string; bot_events: string[] }; interactivity: { is_enabled: boolean; request_url: string } };
}

function manifest(): Manifest {
  const doc = readFileSync(join(root, "docs/platforms.md"), "utf8");
  const section = doc.slice(doc.indexOf("### The Slack app manifest"));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (!yaml) throw new Error("no yaml block under 'The Slack app manifest'");
  return loadYaml(yaml) as Manifest;
}

it("asks for every scope the bridge can use, and the command's own", () => {
  // Everything on: mentions, channel follow-ups, private channels, the acknowledgement reaction.
  const channel = slackChannelSchema.parse({
    type: "slack",
    botToken: "xoxb-1111-2222-manifest",
    signingSecret: "manifestSigningSecret0123456789",
    access: { mode: "open", allowUnlistedGroups: true },
  });
  const needed = scopesNeeded(channel).map((n) => n.scope);
  const asked = manifest().oauth_config.scopes.bot;
  expect(needed.length).toBeGreaterThan(5);
  for (const scope of needed) expect(asked, `the manifest lacks ${scope}`).toContain(scope);
  expect(asked).toContain("commands");
});

it("subscribes to the events the bridge reads, with interactivity for buttons, all at the events endpoint", () => {
  const { settings, features } = manifest();
  expect(settings.event_subscriptions.bot_events).toEqual(expect.arrayContaining(["message.im", "app_mention", "message.channels", "message.groups"]));
  expect(settings.interactivity.is_enabled).toBe(true);
  const path = slackChannelSchema.parse({ type: "slack", botToken: "xoxb-1111-2222-manifest", signingSecret: "manifestSigningSecret0123456789" }).http.path;
  for (const url of [settings.event_subscriptions.request_url, settings.interactivity.request_url, ...features.slash_commands.map((c) => c.url)]) {
    expect(new URL(url).pathname).toBe(path);
  }
  expect(features.slash_commands.map((c) => c.command)).toEqual(["/agent"]);
});
