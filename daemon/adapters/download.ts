/**
 * Downloads an attachment (any platform) without ever holding more than the limit in
 * memory: the reported size is checked first, then the stream is counted and
 * cut off, since a reported size is only a claim.
 */
export type DownloadResult =
  | { ok: true; data: Buffer; contentType?: string }
  | { ok: false; reason: "too_large"; size: number }
  | { ok: false; reason: "failed"; detail: string };

export interface DownloadOptions {
  maxBytes: number;
  /** Size Discord reported, checked before any byte is fetched. */
  reportedSize?: number;
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
}

export async function downloadAttachment(url: string, options: DownloadOptions): Promise<DownloadResult> {
  const { maxBytes } = options;
  if (options.reportedSize !== undefined && options.reportedSize > maxBytes) {
    return { ok: false, reason: "too_large", size: options.reportedSize };
  }
  const fetchImpl = options.fetchImpl ?? fetch;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 60_000);
  try {
    const response = await fetchImpl(url, { signal: controller.signal, redirect: "follow" });
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: false, reason: "failed", detail: `HTTP ${response.status}` };
    }
    const declared = Number(response.headers.get("content-length") ?? Number.NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      await response.body.cancel().catch(() => undefined);
      return { ok: false, reason: "too_large", size: declared };
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { ok: false, reason: "too_large", size: total };
      }
      chunks.push(value);
    }
    const result: DownloadResult = { ok: true, data: Buffer.concat(chunks) };
    const contentType = response.headers.get("content-type");
    if (contentType) result.contentType = contentType;
    return result;
  } catch (error) {
    return { ok: false, reason: "failed", detail: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}
