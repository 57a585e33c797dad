/**
 * The fake Blossom server keeps BUD-01/02's rules for an upload's
 * authorization, checked here with events made by nostr-tools as any client
 * makes them (not by the bridge's code): kind 24242, `created_at` in the past,
 * an `expiration` in the future, `t` = upload, an `x` naming the blob.
 */
import { createHash } from "node:crypto";
import { type EventTemplate, finalizeEvent, generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { describe, expect, it, onTestFinished } from "vitest";
import { createFakeBlossom } from "./blossom.js";

const blob = Buffer.from("a blob of bytes");
const hash = createHash("sha256").update(blob).digest("hex");
const now = () => Math.floor(Date.now() / 1000);

function auth(change: Partial<EventTemplate> = {}, key = generateSecretKey()): string {
  const event = finalizeEvent(
    {
      kind: 24242,
      created_at: now() - 1,
      content: "Upload blob",
      tags: [
        ["t", "upload"],
        ["x", hash],
        ["expiration", String(now() + 60)],
      ],
      ...change,
    },
    key,
  );
  return `Nostr ${Buffer.from(JSON.stringify(event)).toString("base64")}`;
}

async function server(options: { maxBytes?: number } = {}) {
  const fake = await createFakeBlossom(options);
  onTestFinished(() => fake.close());
  const upload = (authorization: string | undefined, body: Uint8Array = blob) =>
    fetch(`${fake.url}/upload`, { method: "PUT", headers: authorization ? { authorization } : {}, body });
  return { fake, upload };
}

describe("the fake Blossom server's upload authorization (BUD-01, BUD-02)", () => {
  it("keeps a blob under a valid event and serves it by its hash, unchanged", async () => {
    const { fake, upload } = await server();
    const key = generateSecretKey();
    const response = await upload(auth({}, key));
    expect(response.status).toBe(200);
    const descriptor = (await response.json()) as { url: string; sha256: string; size: number };
    expect(descriptor).toMatchObject({ sha256: hash, size: blob.length, url: `${fake.url}/${hash}` });
    expect(Buffer.from(await (await fetch(descriptor.url)).arrayBuffer())).toEqual(blob);
    expect((await fetch(`${fake.url}/${hash}.bin`, { method: "HEAD" })).status).toBe(200);
    expect(fake.uploads()).toEqual([{ sha256: hash, size: blob.length, type: undefined, pubkey: getPublicKey(key) }]);
  });

  it("refuses with 401 and a reason: no event, another kind, expired, from the future, another verb, no x for the blob, a bad signature", async () => {
    const { fake, upload } = await server();
    const cases: [string | undefined, RegExp][] = [
      [undefined, /Missing Auth/],
      [auth({ kind: 27235 }), /kind 24242/],
      [
        auth({
          tags: [
            ["t", "upload"],
            ["x", hash],
            ["expiration", String(now() - 1)],
          ],
        }),
        /expired/,
      ],
      [
        auth({
          tags: [
            ["t", "upload"],
            ["x", hash],
          ],
        }),
        /expiration/,
      ],
      [auth({ created_at: now() + 600 }), /future/],
      [
        auth({
          tags: [
            ["t", "delete"],
            ["x", hash],
            ["expiration", String(now() + 60)],
          ],
        }),
        /t tag/,
      ],
      [
        auth({
          tags: [
            ["t", "upload"],
            ["x", "0".repeat(64)],
            ["expiration", String(now() + 60)],
          ],
        }),
        /x tag/,
      ],
      [
        `Nostr ${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(auth().slice(6), "base64").toString()), content: "changed" })).toString("base64")}`,
        /signature/,
      ],
    ];
    for (const [authorization, reason] of cases) {
      const response = await upload(authorization);
      expect(response.status, String(reason)).toBe(401);
      expect(((await response.json()) as { message: string }).message).toMatch(reason);
      expect(response.headers.get("x-reason")).toMatch(reason);
    }
    expect(fake.uploads()).toEqual([]);
    expect((await fetch(`${fake.url}/${hash}`)).status).toBe(404);
  });

  it("refuses a blob over its size with 413", async () => {
    const { upload } = await server({ maxBytes: 4 });
    expect((await upload(auth())).status).toBe(413);
  });
});
