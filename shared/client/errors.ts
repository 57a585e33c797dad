/**
 * What a failed call to the service looks like to code that uses the client:
 * the HTTP status (0 when nothing came back), the contract's `detail`, the whole
 * body, and the OpenAI-style `code` when a gateway error carries one.
 */
export class ServiceError extends Error {
  override readonly name = "ServiceError";
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly body: unknown,
    readonly code?: string,
    options?: { cause?: unknown },
  ) {
    super(ServiceError.describe(status, detail, body), options);
  }

  /** True for failures worth retrying: nothing came back, or a 5xx. */
  get retryable(): boolean {
    return this.status === 0 || this.status >= 500;
  }

  private static describe(status: number, detail: unknown, body: unknown): string {
    const text =
      typeof detail === "string"
        ? detail
        : detail && typeof detail === "object" && "error" in detail && typeof detail.error === "string"
          ? detail.error
          : Array.isArray(detail)
            ? detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join(".")}: ${d.msg ?? ""}`).join("; ")
            : (errorMessageOf(body) ?? "request failed");
    return status === 0 ? `service unreachable: ${text}` : `HTTP ${status}: ${text}`;
  }
}

function errorMessageOf(body: unknown): string | undefined {
  if (body && typeof body === "object" && "error" in body) {
    const error = (body as { error: unknown }).error;
    if (error && typeof error === "object" && "message" in error && typeof error.message === "string") return error.message;
  }
  return undefined;
}

export function errorCodeOf(body: unknown): string | undefined {
  if (body && typeof body === "object" && "error" in body) {
    const error = (body as { error: unknown }).error;
    if (error && typeof error === "object" && "code" in error && typeof error.code === "string") return error.code;
  }
  return undefined;
}
