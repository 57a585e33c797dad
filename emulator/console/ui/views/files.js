// An instance's workspace: browse folders, download, upload, delete.
import { Action, api, asOrg, get, html, Loading, useLive, useState } from "../lib.js";
import { InstanceHeader, useInstance } from "./instances.js";

const parentOf = (path) => (path === "." || !path.includes("/") ? "." : path.slice(0, path.lastIndexOf("/")));
const size = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);

export function Files({ id }) {
  const { state, instance } = useInstance(id);
  const [path, setPath] = useState(new URLSearchParams(location.search).get("path") || ".");
  const org = instance?.organization_id;
  const filesUrl = (suffix, p) => asOrg(org, `/v1/instances/${encodeURIComponent(id)}/files${suffix}?path=${encodeURIComponent(p)}`);
  const [listing, reload] = useLive(
    async () => (org ? get(filesUrl("", path)) : undefined),
    [org, path],
    (type, d) => type === "request" && d.method !== "GET" && d.path.startsWith(`/v1/instances/${id}/files`),
  );
  const open = (p) => {
    setPath(p);
    history.replaceState(null, "", `${location.pathname}?path=${encodeURIComponent(p)}`);
  };
  const [file, setFile] = useState();
  const upload = async (e) => {
    e.preventDefault();
    if (!file) return;
    const form = new FormData();
    form.append("path", path === "." ? file.name : `${path}/${file.name}`);
    form.append("file", file);
    await api("POST", asOrg(org, `/v1/instances/${encodeURIComponent(id)}/files/upload`), form);
    e.currentTarget?.reset?.();
    setFile(undefined);
    await reload();
  };
  return html`<section>
    <${InstanceHeader} id=${id} instance=${instance} state=${state} current="/files" />
    ${
      instance &&
      html`<p class="crumbs">Folder <code>${path}</code> ${path !== "." ? html`<button onClick=${() => open(parentOf(path))}>Up</button>` : null}</p>
      <form class="toolbar" onSubmit=${(e) => upload(e).catch((err) => alert(err.message))}>
        <label>Upload into this folder <input type="file" onChange=${(e) => setFile(e.currentTarget.files[0])} /></label>
        <button type="submit" disabled=${!file}>Upload</button>
      </form>
      ${listing.data === undefined && !listing.error ? null : null}
      <${Loading} state=${listing}>${(data) =>
        !data || data.entries.length === 0
          ? html`<p class="empty">This folder is empty. Upload a file above, or <code>curl -F path=notes.txt -F file=@notes.txt -H "authorization: Bearer $KEY" ${location.origin}/v1/instances/${id}/files/upload</code></p>`
          : html`<div class="table-wrap"><table data-testid="files">
              <thead><tr><th>Name</th><th>Size</th><th>Modified</th><th></th></tr></thead>
              <tbody>${data.entries.map(
                (f) => html`<tr key=${f.path}>
                  <td>${f.is_dir ? html`<button class="linklike" onClick=${() => open(f.path)}>${f.name}/</button>` : html`<a href=${filesUrl("/download", f.path)} download=${f.name}>${f.name}</a>`}</td>
                  <td>${f.is_dir ? "—" : size(f.size)}</td>
                  <td>${new Date(f.mod_time).toLocaleString()}</td>
                  <td><${Action} confirm=${`Delete ${f.path}?`} run=${async () => {
                    await api("DELETE", filesUrl("", f.path));
                    await reload();
                  }} aria-label=${`Delete ${f.path}`}>Delete<//></td>
                </tr>`,
              )}</tbody></table></div>`}<//>`
    }
  </section>`;
}
