/**
 * What a failed call to the service looks like to code that uses the client,
 * typed by where it failed (in the manner of grammY's `GrammyError` /
 * `HttpError` and discord.js's `DiscordAPIError` / `HTTPError`):
 *
 * - `service`: the service answered with an error status (its own refusal:
 *   `{"detail": ...}` in the contract's shape);
 * - `gateway`: the service relayed an error the instance's gateway answered
 *   (an OpenAI-style `{"error": {...}}` body, passed through unchanged);
 * - `network`: no answer came back (connection refused or reset, a timeout);
 *   `cause` holds undici's error;
 * - `stream`: a streamed answer broke, ended early, reported an error or
 *   failure event, or sent an event that does not match its schema.
 *
 * A call the caller aborted is none of these: it rejects with the signal's
 * reason, as `fetch` does, so the caller meets its own value again.
 *
 * An answer's `x-request-id` is kept as `requestId`: the id to quote, which
 * finds the service's own log line for the call.
 */

/** Where a call failed. */
export type ServiceErrorKind = "service" | "gateway" | "network" | "stream";

/** How to build a `ServiceError`: an HTTP answer has a status; the others never do. */
export type ServiceErrorInit =
  | {
      /** `service`: the service's own refusal; `gateway`: its relay of the gateway's answer. */
      kind: "service" | "gateway";
      /** The HTTP status the service answered with. */
      status: number;
      /** The whole body, parsed as JSON when it is. */
      body: unknown;
      /** The answer's `x-request-id`, when it carried one. */
      requestId?: string | undefined;
    }
  | {
      kind: "network";
      /** What went wrong, for the message. */
      message: string;
      /** The transport's error. */
      cause: unknown;
    }
  | {
      kind: "stream";
      /** What went wrong, for the message. */
      message: string;
      /** The event that carried the failure, when one did. */
      body?: unknown;
      /** The event's OpenAI-style code, or `invalid_stream_event` / `response.failed` / `response.incomplete`. */
      code?: string | undefined;
      /** The transport's error, when the stream broke. */
      cause?: unknown;
      /** The `x-request-id` of the answer the stream came in, when known. */
      requestId?: string | undefined;
    };

export class ServiceError extends Error {
  override readonly name = "ServiceError";
  /** Where the call failed. */
  readonly kind: ServiceErrorKind;
  /** The HTTP status: set for `service` and `gateway`, never for `network` or `stream`. */
  readonly status: number | undefined;
  /** The contract's `detail` (a `service` answer), else undefined. */
  readonly detail: unknown;
  /** The body or event that carried the failure, when there was one. */
  readonly body: unknown;
  /** The OpenAI-style `code` of a gateway error or stream event. */
  readonly code: string | undefined;
  /** The `x-request-id` the service answered with: quote it to find the service's log line. Undefined for `network`. */
  readonly requestId: string | undefined;

  constructor(init: ServiceErrorInit) {
    const detail = init.kind === "service" ? detailOf(init.body) : undefined;
    super(describe(init, detail), "cause" in init ? { cause: init.cause } : undefined);
    this.kind = init.kind;
    this.status = "status" in init ? init.status : undefined;
    this.detail = detail;
    this.body = "body" in init ? init.body : undefined;
    this.code = init.kind === "stream" ? init.code : init.kind === "network" ? undefined : errorCodeOf(init.body);
    this.requestId = init.kind === "network" ? undefined : init.requestId;
  }

  /**
   * The error for an HTTP error answer. Whether the service refused or relayed
   * the gateway's answer is decided here, once, from the body's shape: the
   * contract's errors carry `detail`, a relayed gateway error carries `error`
   * and no `detail`.
   */
  static fromAnswer(status: number, body: unknown, requestId?: string): ServiceError {
    return new ServiceError({ kind: isGatewayBody(body) ? "gateway" : "service", status, body, requestId });
  }

  /** True for failures worth retrying: no answer, a broken or failed stream, or a 5xx. */
  get retryable(): boolean {
    return this.status === undefined || this.status >= 500;
  }
}

/** An OpenAI-style error body, as the service relays it from the gateway: `{"error": {...}}` without `detail`. */
function isGatewayBody(body: unknown): boolean {
  return typeof body === "object" && body !== null && "error" in body && !("detail" in body);
}

function detailOf(body: unknown): unknown {
  return body && typeof body === "object" && "detail" in body ? body.detail : undefined;
}

function describe(init: ServiceErrorInit, detail: unknown): string {
  if (init.kind === "network") return `service unreachable: ${init.message}`;
  if (init.kind === "stream") return init.message;
  const text =
    typeof detail === "string"
      ? detail
      : detail && typeof detail === "object" && "error" in detail && typeof detail.error === "string"
        ? detail.error
        : Array.isArray(detail)
          ? detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join(".")}: ${d.msg ?? ""}`).join("; ")
          : (errorMessageOf(init.body) ?? "request failed");
  return `HTTP ${init.status}: ${text}`;
}

function errorMessageOf(body: unknown): string | undefined {
  if (body && typeof body === "object" && "error" in body) {
    const error = body.error;
    if (error && typeof error === "object" && "message" in error && typeof error.message === "string") return error.message;
  }
  return undefined;
}

/** The OpenAI-style `error.code` of a body, when it has one. */
function errorCodeOf(body: unknown): string | undefined {
  if (body && typeof body === "object" && "error" in body) {
    const error = body.error;
    if (error && typeof error === "object" && "code" in error && typeof error.code === "string") return error.code;
  }
  return undefined;
}
