import { z } from "zod";

/**
 * The control plane's view of a model script (`/_emulator/model-script`,
 * docs/api-contract.md, "Scripting the model"). The script itself is checked
 * by the emulator (its rules, regular expressions and schemas), so here it is
 * any JSON object; a script that fails the check is 422 with the place named.
 */
export const ModelScriptBody = z.record(z.string(), z.unknown());

export const ModelScriptView = z.strictObject({
  scope: z.enum(["global", "sandbox", "instance"]),
  /** With `scope: "instance"`. */
  instance_id: z.string().optional(),
  /** With `scope: "sandbox"`. */
  sandbox_id: z.string().optional(),
  /** The script in force in this scope, as it was set (defaults filled in); null when none. */
  script: z.record(z.string(), z.unknown()).nullable(),
  /** How many times each rule fired since the script was set, by rule name. */
  hits: z.record(z.string(), z.number().int().min(0)),
});
export type ModelScriptView = z.infer<typeof ModelScriptView>;
