/**
 * One place where what a server said differs from the contract: the unit of
 * the proxy's drift report and of the conformance kit's checks. Stored as
 * JSON (the drift report), so it is a zod schema and read back parsed.
 */
import { z } from "zod";

export const DRIFT_KINDS = [
  /** A status the route's contract does not list. */
  "status",
  /** A `content-type` the route's contract does not list for that status. */
  "content_type",
  /** A body where the contract says there is none, or none where it says there is one, or a body that is not JSON. */
  "body",
  /** A field the contract requires is absent. */
  "missing",
  /** A field the contract does not know, on an object the contract closes. */
  "unknown",
  /** A value of the wrong JSON type. */
  "type",
  /** A value outside the contract's enumeration or constant. */
  "enum",
  /** A value of the right type in the wrong form: pattern, format, length, range, item count. */
  "format",
  /** A header the contract names, with a value it does not allow. */
  "header",
  /** A streamed event whose `type` the contract does not know. */
  "unknown_event",
  /** A stream that breaks the contract's rules as a whole: `event:` name differs from the data's `type`, no terminal event, unordered sequence numbers. */
  "stream",
  /** A request to a method and path the contract does not have. */
  "route",
] as const;
export const DriftKind = z.enum(DRIFT_KINDS);
export type DriftKind = z.infer<typeof DriftKind>;

export const Drift = z.strictObject({
  /** `METHOD /path/{template}`, e.g. `GET /v1/instances/{instance_id}`. */
  route: z.string(),
  /**
   * Where: `$` is the body (`$.output[0].type`), `events[3]` a streamed event
   * (`events[3].response.id`), `headers.retry-after` a header, `status` the status line.
   */
  jsonPath: z.string(),
  /** What the contract says, briefly: `string`, `one of: running, stopped`, `absent`, `200, 404`. */
  expected: z.string(),
  /** What came back, briefly: `integer`, `"paused"`, `absent`, `404`. */
  actual: z.string(),
  kind: DriftKind,
  /** Whether the request or the answer drifted (default: the answer). */
  side: z.enum(["request", "response"]).optional(),
});
export type Drift = z.infer<typeof Drift>;
