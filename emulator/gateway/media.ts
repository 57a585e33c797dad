/**
 * The small files `!file NAME [KIND]` writes into an instance's workspace:
 * the same bytes for the same name every time, so a test can compare them.
 */
import { dirname, join } from "node:path";
import { writeFileAtomic } from "../../shared/durable-files.js";

export type FileKind = "png" | "pdf" | "txt";
export const FILE_KINDS: readonly FileKind[] = ["png", "pdf", "txt"];

/** Where `!file` puts its files, relative to the instance's tree (the files API's paths). */
export const FILE_DIR = "workspace";

/** A 1x1 opaque red PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");

/** A one-page PDF that says `text`, with a correct cross-reference table. */
function pdf(text: string): Buffer {
  const escaped = text.replace(/[\\()]/g, "\\$&").replace(/[^\x20-\x7e]/g, "?");
  const stream = `BT /F1 18 Tf 36 96 Td (${escaped}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 320 160] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, "0")} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}

/** The kind a name implies by its extension; text otherwise. */
export const kindOfName = (name: string): FileKind => {
  const ext = name.slice(name.lastIndexOf(".") + 1).toLowerCase();
  return ext === "png" || ext === "pdf" ? ext : "txt";
};

/** The bytes of `!file NAME KIND`. */
export function fileBytes(kind: FileKind, name: string): Buffer {
  if (kind === "png") return Buffer.from(PNG);
  if (kind === "pdf") return pdf(`File ${name} from the fake model.`);
  return Buffer.from(`File ${name} from the fake model.\n`, "utf8");
}

/**
 * The gateway's `writeFile` over an instance tree: `path` is relative to the
 * instance's root; written whole or not at all (temporary file in `tempDir`).
 */
export const treeFileWriter =
  (rootOf: (instanceId: string) => string, tempDir: () => string) =>
  (instanceId: string, path: string, bytes: Buffer): Promise<void> =>
    writeFileAtomic(join(rootOf(instanceId), path), bytes, 0o644, { tempDir: dirname(tempDir()) });
