/**
 * The rules of a channel's config, whoever applies them (the connect route,
 * a fixture): which fields are secrets, and what a config must hold.
 */
import { ApiError, badRequest } from "../errors.js";
import type { ChannelSpec } from "../channels/catalog.js";
import { SECRET_NAME } from "../workspace/redact.js";

/** Whether a config field holds a secret: the catalog says so, or its name does. */
export const isSecret = (spec: ChannelSpec, key: string) => spec.fields[key]?.secret ?? SECRET_NAME.test(key);

/** Missing fields as one 422 (every one of them), then the first wrong form as a 400. */
export function checkConfig(spec: ChannelSpec, config: Record<string, string>): void {
  const missing = Object.keys(spec.fields).filter((key) => !Object.hasOwn(config, key) || config[key]!.trim() === "");
  if (missing.length) {
    throw new ApiError(
      422,
      missing.map((key) => ({ loc: ["body", "config", key], msg: `Field required: ${spec.fields[key]!.description}`, type: "missing" })),
    );
  }
  for (const [key, f] of Object.entries(spec.fields)) {
    const why = f.check(config[key]!, config);
    if (why) throw badRequest(`Invalid ${spec.label} ${key}: ${why}.`);
  }
}
