/** The file routes, all inside one folder of the run's instance named after the run. */
import { type Check, expectDetail, expectEmpty, expectStatus, field, jsonObject, that } from "../check.js";

const TEXT = "conformance: héllo, wörld\n";
const BYTES = Buffer.from([0, 1, 2, 253, 254, 255, 10, 13]);

export const fileChecks: readonly Check[] = [
  {
    id: "files.write-read",
    title: "PUT .../files/content writes a text file (parents created); GET reads it back",
    needs: ["running"],
    async run({ call, facts, run }) {
      facts.folder = `workspace/${run.prefix}`;
      const params = { instance_id: facts.instanceId! };
      const path = `${facts.folder}/deep/a.txt`;
      expectEmpty(await call("writeFile", { params, body: { path, content: TEXT } }));
      const read = await call("readFile", { params, query: { path } });
      expectStatus(read, 200);
      that(field(jsonObject(read), "content") === TEXT, "the content read back differs from what was written");
    },
  },
  {
    id: "files.list",
    title: "GET .../files lists a directory with name, path, is_dir, size (bytes), mod_time, permissions",
    needs: ["folder"],
    async run({ call, facts }) {
      const ex = await call("listFiles", { params: { instance_id: facts.instanceId! }, query: { path: `${facts.folder}/deep` } });
      expectStatus(ex, 200);
      const entries = field(jsonObject(ex), "entries");
      that(Array.isArray(entries), "entries is not a list");
      const entry = entries.find((e) => field(e, "name") === "a.txt");
      that(entry, "a.txt is not listed");
      that(field(entry, "size") === Buffer.byteLength(TEXT), `size is ${JSON.stringify(field(entry, "size"))}, expected ${Buffer.byteLength(TEXT)} (bytes)`);
      that(field(entry, "is_dir") === false, "a file reads is_dir true");
    },
  },
  {
    id: "files.mkdir-move",
    title: "mkdir is 204 (again too); move renames (204); moving onto an existing path is 409",
    needs: ["folder"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      const dir = `${facts.folder}/made/here`;
      expectEmpty(await call("mkdir", { params, query: { path: dir } }));
      expectEmpty(await call("mkdir", { params, query: { path: dir } }));
      expectEmpty(await call("moveFile", { params, body: { source: `${facts.folder}/deep/a.txt`, destination: `${dir}/b.txt` } }));
      expectDetail(await call("readFile", { params, query: { path: `${facts.folder}/deep/a.txt` } }), 404);
      expectEmpty(await call("writeFile", { params, body: { path: `${facts.folder}/c.txt`, content: "c" } }));
      expectDetail(await call("moveFile", { params, body: { source: `${facts.folder}/c.txt`, destination: `${dir}/b.txt` } }), 409);
    },
  },
  {
    id: "files.upload-download",
    title: "A multipart upload is 204; download answers the same bytes as an attachment",
    needs: ["folder"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      const path = `${facts.folder}/blob.bin`;
      const form = new FormData();
      form.append("path", path);
      form.append("file", new Blob([BYTES]), "blob.bin");
      expectEmpty(await call("uploadFile", { params, raw: { data: form } }));
      const down = await call("downloadFile", { params, query: { path } });
      expectStatus(down, 200);
      that(down.bytes.equals(BYTES), `downloaded ${down.bytes.length} bytes that differ from the ${BYTES.length} uploaded`);
      that(/^attachment/.test(down.headers["content-disposition"] ?? ""), `content-disposition is ${down.headers["content-disposition"]}`);
    },
  },
  {
    id: "files.refused",
    title: "A path that leaves the root is 400; a missing path is 404",
    needs: ["running"],
    async run({ call, facts, run }) {
      const params = { instance_id: facts.instanceId! };
      expectDetail(await call("readFile", { params, query: { path: "../outside.txt" } }), 400);
      expectDetail(await call("readFile", { params, query: { path: `workspace/${run.prefix}-missing.txt` } }), 404);
    },
  },
  {
    id: "files.delete",
    title: "DELETE .../files removes a directory with its content (204); it is 404 afterwards",
    needs: ["folder"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      expectEmpty(await call("deleteFile", { params, query: { path: facts.folder! } }));
      expectDetail(await call("listFiles", { params, query: { path: facts.folder! } }), 404);
    },
  },
];
