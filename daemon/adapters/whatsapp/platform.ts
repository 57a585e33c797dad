/**
 * The WhatsApp platform's descriptor: channel schema, its auth folder
 * default, the `check` probe (linked when the auth folder's creds name a
 * paired account) and a lazy adapter. Light on purpose: Baileys loads only
 * in `create`. A channel holds no secret in the config (the pairing keys
 * live in its auth folder).
 */
import { join } from "node:path";
import { z } from "zod";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, type ChannelCheckDeps, loadAdapterModule } from "../platform.js";
import { whatsappChannelSchema, whatsappUserIds, type WhatsAppChannelConfig } from "./config.js";

/** Baileys' creds.json: `me` is set once a phone has paired. */
const WhatsAppCreds = z.looseObject({ me: z.looseObject({ id: z.string() }).optional() });

async function checkWhatsApp(channel: WhatsAppChannelConfig, deps: ChannelCheckDeps): Promise<CheckResult> {
  if (deps.storedCredential) return checkStoredLink(channel, deps.storedCredential);
  const subject = channelSubject(channel);
  const authDir = channel.authDir;
  const notLinked = (why: string): CheckResult => ({
    status: "fail",
    subject,
    message: `not linked to a phone (${why} in ${authDir})`,
    fix: "run `agent-bridge run --config ...` in a terminal and scan the QR code it prints with WhatsApp (Settings → Linked devices)",
  });
  let text: string;
  try {
    text = await deps.readFile(join(authDir, "creds.json"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT"
      ? notLinked("no creds.json")
      : {
          status: "fail",
          subject,
          message: `cannot read ${join(authDir, "creds.json")} (${code ?? "read error"})`,
          fix: "check the folder's owner and permissions",
        };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return notLinked("creds.json is not valid JSON");
  }
  const creds = WhatsAppCreds.safeParse(raw);
  if (!creds.success || !creds.data.me) return notLinked("pairing was never completed");
  return { status: "ok", subject, message: "linked to a phone" };
}

/** Several machines: the link's creds are a record in the database (auth.ts `recordsAuth`). */
async function checkStoredLink(channel: WhatsAppChannelConfig, read: NonNullable<ChannelCheckDeps["storedCredential"]>): Promise<CheckResult> {
  const subject = channelSubject(channel);
  let raw: unknown;
  try {
    raw = await read(channel, "creds", "creds");
  } catch (error) {
    return { status: "fail", subject, message: `cannot read its link from the database (${error instanceof Error ? error.message : "read error"})` };
  }
  const creds = WhatsAppCreds.safeParse(raw);
  if (raw !== undefined && creds.success && creds.data.me) return { status: "ok", subject, message: "linked to a phone (its keys are in the database)" };
  return {
    status: "fail",
    subject,
    message: `not linked to a phone (${raw === undefined ? "no keys in the database yet" : "pairing was never completed"})`,
    fix: "start a daemon of this config in a terminal and scan the QR code the node that owns the account prints (Settings → Linked devices)",
  };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "@whiskeysockets/baileys": "7.0.0-rc14" };
const loadAdapter = () => loadAdapterModule({ type: "whatsapp", libraries }, () => import("./index.js"));

export const whatsappPlatform = definePlatform({
  type: "whatsapp",
  name: "WhatsApp",
  libraries,
  users: whatsappUserIds,
  schema: whatsappChannelSchema,
  finalize: (channel, { id, dataDir }): WhatsAppChannelConfig => ({ ...channel, id, authDir: channel.authDir ?? join(dataDir, "whatsapp", id) }),
  secrets: () => [],
  check: checkWhatsApp,
  load: loadAdapter,
  async create(channel, deps) {
    const { createWhatsAppAdapter } = await loadAdapter();
    return createWhatsAppAdapter(channel, deps);
  },
});
