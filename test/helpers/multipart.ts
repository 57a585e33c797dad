/**
 * A small multipart/form-data parser for the platform fakes: the bots' clients
 * (grammY, discord.js) upload files as multipart, and grammY's bodies (an
 * unquoted file name) are not what undici's strict parser accepts.
 */
/** The parts of a multipart/form-data body, in order; `fileName` is set for file parts. */
export function multipartParts(body: Buffer, contentType: string): { name: string; fileName?: string; data: Buffer }[] {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (!boundary) return [];
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: { name: string; fileName?: string; data: Buffer }[] = [];
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    const raw = body.subarray(start, next);
    const headerEnd = raw.indexOf("\r\n\r\n");
    if (headerEnd >= 0) {
      const headers = raw.subarray(0, headerEnd).toString("utf8");
      let data = raw.subarray(headerEnd + 4);
      if (data.subarray(-2).toString() === "\r\n") data = data.subarray(0, -2);
      const name = /(?:^|[;\s:])name="([^"]*)"/i.exec(headers)?.[1];
      // grammY writes the file name unquoted.
      const fileName = /filename=(?:"([^"]*)"|([^;\r\n]*))/i
        .exec(headers)
        ?.slice(1)
        .find((n) => n !== undefined);
      if (name !== undefined) parts.push({ name, ...(fileName !== undefined ? { fileName } : {}), data: Buffer.from(data) });
    }
    at = next;
  }
  return parts;
}
