# syntax=docker/dockerfile:1
# One image for agent-bridge: `emulator` (the default command), `run` (the bridge daemon) and
# `start`. How to use it: docs/emulator.md "In a container", docs/bridge.md "Running in a
# container"; compose.yaml runs the emulator alone, or two daemons on PostgreSQL.
# What can be checked without a container engine is checked by test/package/image.test.ts:
# the production install below, run as this image runs it.
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: the development dependencies compile dist/; the result is packed as npm would
# publish it, with a package.json naming it and the platform libraries a daemon may load.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build && node scripts/pack-production.mjs /out

# --- the image: a production install of that tarball (no development dependency, no build
# tool, no install script), owned by root and run as the unprivileged `node` user (uid 1000).
FROM ${NODE_IMAGE}
# tini as PID 1: SIGTERM and SIGINT reach agent-bridge, which stops gracefully on either
# (the emulator flushes its store; the daemon finishes or journals what is in flight and, on
# several machines, hands its accounts over); zombies are reaped.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    PATH=/app/node_modules/.bin:$PATH
WORKDIR /app
COPY --from=build /out/ ./
RUN --mount=type=cache,target=/root/.npm npm install --omit=dev --ignore-scripts --no-audit --no-fund
COPY docker/healthcheck.mjs ./healthcheck.mjs
# Everything the commands write lives on the volume: the emulator's state in /data/emulator, a
# daemon's journal in /data/daemon (its config's dataDir), `start`'s in /data.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
WORKDIR /data
USER node
# 8080: the emulator (`emulator`, `start --port 8080`); 9464: a daemon's /healthz and /metrics.
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "/app/healthcheck.mjs"]
ENTRYPOINT ["/usr/bin/tini", "--", "agent-bridge"]
CMD ["emulator", "--host", "0.0.0.0", "--port", "8080", "--data-dir", "/data/emulator"]
