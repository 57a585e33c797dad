// Snapshot export and import, and reset behind a confirmation.
import { Action, api, html, useState } from "../lib.js";

export function Snapshot() {
  const [message, setMessage] = useState();
  const exportNow = async () => {
    const res = await fetch("/_emulator/snapshot", { headers: { "x-emulator-console": "1" } });
    if (!res.ok) throw new Error(`Export failed: HTTP ${res.status}`);
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement("a");
    a.href = url;
    a.download = `emulator-snapshot-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    setMessage("Snapshot downloaded.");
  };
  const importFile = async (e) => {
    const file = e.currentTarget.files[0];
    if (!file) return;
    let body;
    try {
      body = JSON.parse(await file.text());
    } catch {
      setMessage(`${file.name} is not JSON.`);
      return;
    }
    try {
      await api("PUT", "/_emulator/snapshot", body);
      setMessage(`Imported ${file.name}: the emulator now holds that state.`);
    } catch (err) {
      setMessage(`Import refused: ${err.message}`);
    }
  };
  return html`<section>
    <h1>Snapshot & reset</h1>
    <div class="card">
      <h2>Export</h2>
      <p>The whole state (organizations, keys as hashes, instances, conversations, workspace files) as one JSON file.</p>
      <${Action} run=${exportNow}>Download snapshot<//>
    </div>
    <div class="card">
      <h2>Import</h2>
      <p>Replaces everything with a snapshot taken earlier.</p>
      <label>Snapshot file <input type="file" accept="application/json,.json" onChange=${importFile} /></label>
    </div>
    <div class="card">
      <h2>Reset</h2>
      <p>Forgets all state, files and fault rules. There is no undo: export first if you may want it back.</p>
      <${Action} class="danger" confirm="Really forget everything?" run=${async () => {
        await api("POST", "/_emulator/reset");
        setMessage("The emulator was reset.");
      }}>Reset…<//>
    </div>
    ${message && html`<p role="status">${message}</p>`}
  </section>`;
}
