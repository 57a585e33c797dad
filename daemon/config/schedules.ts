/**
 * Scheduled prompts in the config: the zod schema (each option described with
 * its default, so config.schema.json carries it) and the type inferred from it.
 */
import { Cron } from "croner";
import { z } from "zod";
import { hostTimeZone, idString, nonEmpty, nonNegInt, timeZoneName } from "../vocabulary/config-fields.js";

/** Whether croner reads `pattern` (five or six fields, or a nickname such as @daily). */
function cronProblem(pattern: string, timeZone: string | undefined): string | undefined {
  try {
    new Cron(pattern, { paused: true, ...(timeZone ? { timezone: timeZone } : {}) });
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : "not a cron expression";
  }
}

export const scheduleSchema = z
  .strictObject({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, _ or -")
      .describe("The schedule's name, unique: its slots are recorded under it, /schedule list shows it. Required."),
    cron: nonEmpty.describe(
      'When it fires: a cron expression ("0 8 * * 1-5": weekdays at 8:00; five fields, or six with seconds first; @hourly, @daily, ...). Required.',
    ),
    timeZone: timeZoneName.optional().describe("The IANA time zone the expression is read in, e.g. Europe/Berlin. Default: the machine's own time zone."),
    channel: nonEmpty.describe("The channel (its id) whose chat the prompt speaks in. Required."),
    chatId: idString.describe("The chat the answer goes to, on that channel (/whoami in it shows the id). Required."),
    threadId: idString
      .optional()
      .describe(
        "A thread within that chat (a topic, a thread, a reply chain; /whoami in it shows the id): the answer goes into it, in its conversation. Default: the chat's top level.",
      ),
    chatType: z.enum(["direct", "group"]).default("direct").describe('"direct" (a person\'s chat with the bot) or "group". Default: direct.'),
    userId: idString
      .optional()
      .describe(
        "In a direct chat, the person whose conversation it is (their id, as /whoami shows it); in a group, who the prompt counts as for routing. Default: the chat id (right where a direct chat's id is the person's).",
      ),
    prompt: nonEmpty.describe("What the agent is asked at each firing. Required."),
    session: z
      .enum(["chat", "own"])
      .default("chat")
      .describe('"chat": the prompt joins the chat\'s own conversation (the agent sees what was said there); "own": a conversation of its own. Default: chat.'),
    silentWord: z
      .string()
      .trim()
      .default("NO_REPLY")
      .describe(
        'An answer that is exactly this word (white space around it aside) is not sent: the prompt can tell the agent to say it when there is nothing worth saying; "" sends every answer. Default: NO_REPLY.',
      ),
    graceMs: nonNegInt
      .default(60 * 60 * 1000)
      .describe(
        "A slot missed while no daemon ran fires once at the next start if it is at most this old, ms; older ones are skipped (logged). Default: 3600000 (1 h).",
      ),
    enabled: z.boolean().default(true).describe("false: the schedule never fires. Default: true."),
  })
  .superRefine((s, ctx) => {
    const problem = cronProblem(s.cron, s.timeZone);
    if (problem) ctx.addIssue({ code: "custom", path: ["cron"], message: `is not a cron expression croner reads (${problem})` });
  })
  .transform((s) => ({ ...s, timeZone: s.timeZone ?? hostTimeZone() }));

export const schedulesSchema = z
  .array(scheduleSchema)
  .default([])
  .describe(
    "Prompts the bridge sends the agent on a schedule, each answered in a chat; fired once per slot, also across restarts and machines. Default: none.",
  );

export type ScheduleConfig = z.output<typeof scheduleSchema>;
