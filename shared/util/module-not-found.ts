/**
 * Whether loading a package failed because `name` is not installed: from `import()`
 * (ERR_MODULE_NOT_FOUND, "Cannot find package 'x'") or from `require()` (MODULE_NOT_FOUND,
 * "Cannot find module 'x'"), which the bundled command uses for its optional libraries.
 */
export function isModuleNotFound(error: unknown, name: string): boolean {
  if (!(error instanceof Error) || !("code" in error)) return false;
  return (error.code === "ERR_MODULE_NOT_FOUND" || error.code === "MODULE_NOT_FOUND") && error.message.includes(`'${name}'`);
}
