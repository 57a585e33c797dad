/**
 * signal-cli's JSON-RPC over HTTP (signal-cli-jsonrpc(5)): one request per
 * POST to `/api/v1/rpc`, answered 200 with a JSON-RPC response (201 with no
 * body for a notification). `account` goes in every call's params: a
 * multi-account daemon requires it, a single-account one ignores it.
 */
import { request } from "undici";
import { z } from "zod";
import type { SignalEndpoint } from "./config.js";
import { SignalRpcError } from "./errors.js";

export { endpointOf, type SignalEndpoint } from "./config.js";

const RpcResponse = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
  result: z.unknown().optional(),
  error: z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() }).optional(),
});

export interface RpcClientOptions {
  endpoint: SignalEndpoint;
  account: string;
  /** Per call, ms. */
  timeoutMs: number;
}

export type RpcCall = (method: string, params: Record<string, unknown>, signal?: AbortSignal) => Promise<unknown>;

/** A JSON-RPC caller; rejects with `SignalRpcError` (an error answer, or an HTTP status), or undici's error when no answer came. */
export function createRpc(options: RpcClientOptions): RpcCall {
  let next = 0;
  return async (method, params, signal) => {
    const id = `ab-${++next}`;
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const res = await request(`${options.endpoint.base}/api/v1/rpc`, {
      method: "POST",
      headers: { ...options.endpoint.headers, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { account: options.account, ...params } }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await res.body.text();
    if (res.statusCode === 201) return undefined;
    if (res.statusCode !== 200) throw new SignalRpcError(method, { httpStatus: res.statusCode, message: `HTTP ${res.statusCode}` });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new SignalRpcError(method, { httpStatus: 200, message: "the answer is not JSON" });
    }
    const parsed = RpcResponse.safeParse(json);
    if (!parsed.success) throw new SignalRpcError(method, { httpStatus: 200, message: "the answer is not a JSON-RPC response" });
    if (parsed.data.error) {
      const { code, message, data } = parsed.data.error;
      throw new SignalRpcError(method, { code, message, data });
    }
    return parsed.data.result;
  };
}
