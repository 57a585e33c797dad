// The image's HEALTHCHECK (`node /app/healthcheck.mjs`): asks the health route of the
// agent-bridge command running in this container, on loopback, and exits 0 when it answers 2xx.
// - `agent-bridge emulator` (the image's default command) and `start`: GET /_emulator/health on
//   port 8080 (with EMULATOR_ADMIN_TOKEN as the bearer when it is set);
// - `agent-bridge run`: GET /healthz on the ops port 9464 (503 while an adapter is not
//   connected, or, on several machines, while the node cannot reach PostgreSQL).
// The first of the two that accepts a connection decides. A command started on other ports
// names them in HEALTHCHECK_EMULATOR_PORT and HEALTHCHECK_OPS_PORT.
const TIMEOUT_MS = 2_500;
const token = process.env.EMULATOR_ADMIN_TOKEN;
const emulatorPort = process.env.HEALTHCHECK_EMULATOR_PORT || "8080";
const opsPort = process.env.HEALTHCHECK_OPS_PORT || "9464";
const urls = [`http://127.0.0.1:${emulatorPort}/_emulator/health`, `http://127.0.0.1:${opsPort}/healthz`];

for (const url of urls) {
  let response;
  try {
    const headers = token && url.includes("/_emulator/") ? { authorization: `Bearer ${token}` } : {};
    response = await fetch(url, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (error) {
    // Nothing listens there: this container runs the other command.
    if (error?.cause?.code === "ECONNREFUSED") continue;
    process.stderr.write(`unhealthy: ${url}: ${error?.cause?.code ?? error?.message ?? error}\n`);
    process.exit(1);
  }
  process.stdout.write(`${response.ok ? "healthy" : "unhealthy"}: ${url} answered ${response.status}\n`);
  process.exit(response.ok ? 0 : 1);
}
process.stderr.write(`unhealthy: nothing answers on ${urls.join(" or ")}\n`);
process.exit(1);
