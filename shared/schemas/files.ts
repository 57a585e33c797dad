import { z } from "zod";

/** Paths are refused beyond this length (well below any filesystem's limit). */
export const MAX_PATH_LENGTH = 1024;
const FilePath = z.string().min(1).max(MAX_PATH_LENGTH);

export const DirectoryEntry = z.object({
  name: z.string(),
  path: z.string(),
  is_dir: z.boolean(),
  size: z.number().int().min(0),
  mod_time: z.string(),
  permissions: z.string(),
});
export const DirectoryListing = z.object({ path: z.string(), entries: z.array(DirectoryEntry) });
export const ListFilesQuery = z.object({ path: FilePath.default(".") });
export const PathQuery = z.object({ path: FilePath });
export const MoveRequest = z.strictObject({ source: FilePath, destination: FilePath });
export const FileContent = z.object({ path: z.string(), content: z.string() });
export const WriteFileRequest = z.strictObject({ path: FilePath, content: z.string() });
