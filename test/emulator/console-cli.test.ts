/** The emulator command prints the console's URL, and that URL serves the console. */
import { describe, expect, it } from "vitest";
import { startCli, stopCli } from "../helpers/cli.js";

describe("emulator command", () => {
  it("prints the web console URL, which opens the console", async () => {
    const run = await startCli(["--port", "0", "--in-memory"]);
    try {
      const printed = /console\s+(http:\/\/\S+)/.exec(run.stdout())?.[1];
      expect(printed).toBe(`${run.url}/_emulator/ui/`);
      const page = await fetch(printed!);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("/_emulator/ui/assets/app.js");
      // The bundled command serves the static assets too, the ones both consoles share included
      // (the build copies them beside the bundle), and finds Preact and htm in node_modules from
      // where the bundle lives.
      for (const asset of ["assets/app.js", "shared/style.css", "shared/console.js", "vendor/preact.mjs", "vendor/hooks.mjs", "vendor/htm.mjs"]) {
        expect((await fetch(`${run.url}/_emulator/ui/${asset}`)).status, asset).toBe(200);
      }
    } finally {
      await stopCli(run, "SIGTERM");
    }
  });

  it("listening on every address, prints a console URL a browser may open (loopback, not 0.0.0.0)", async () => {
    const run = await startCli(["--port", "0", "--in-memory", "--host", "0.0.0.0"]);
    try {
      const printed = /console\s+(http:\/\/\S+)/.exec(run.stdout())?.[1];
      expect(printed).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/_emulator\/ui\/$/);
      expect((await fetch(printed!)).status).toBe(200);
    } finally {
      await stopCli(run, "SIGTERM");
    }
  });
});
