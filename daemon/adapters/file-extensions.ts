/** File-name extensions for the media types platforms send without a file name (one table for every adapter). */
const EXTENSIONS: Record<string, string> = {
  "audio/mp4": "m4a",
  "audio/aac": "m4a",
  "audio/mpeg": "mp3",
  "audio/ogg": "ogg",
  "audio/webm": "webm",
  "audio/wav": "wav",
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "video/mp4": "mp4",
  "application/pdf": "pdf",
  "text/plain": "txt",
};

/** The extension for a media type (parameters such as `; codecs=opus` ignored), `bin` when unknown. */
export function extensionFor(mimeType: string | undefined): string {
  const bare = mimeType?.split(";")[0]?.trim().toLowerCase();
  return (bare && EXTENSIONS[bare]) || "bin";
}
