# syntax=docker/dockerfile:1

# ---- build: install everything, compile TypeScript to dist/, then drop dev dependencies ----
FROM node:20-bookworm-slim AS build
WORKDIR /app

# `npm ci` runs the `prepare` script (tsc -p tsconfig.build.json), so the sources must be here first.
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: production dependencies, compiled code, declared pipelines and config ----
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app

COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The run pages' script, stylesheet and icon, served as they are (no front-end build).
COPY assets ./assets
# jobs/*.yaml (JOBS_DIR defaults to ./jobs) and config/*.yaml (read from ./config).
COPY jobs ./jobs
COPY config ./config

# A writable place for local outputs (`--out /app/runs`); everything else stays root-owned, read-only.
RUN mkdir -p /app/runs && chown node:node /app/runs

USER node
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["worker"]
