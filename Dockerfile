# syntax=docker/dockerfile:1

# Node 24: the LTS line supported until April 2028 (Node 20 ended in April 2026; 22 ends in April
# 2027), and the one the tests and benchmarks run on (package.json engines and the `node`
# devDependency). Debian 13
# (trixie) is the current stable base. Every stage uses the same image, so the one node binary
# that compiles is the one that runs.

# ---- deps: every dependency, from the lock file only (this layer is rebuilt when the lock changes) ----
FROM node:24-trixie-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are here (build does it below); the only
# other install scripts are optional native speed-ups with prebuilt packages, and dev-only tools.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund

# ---- build: compile TypeScript to dist/, then bundle the command (scripts/bundle-cli.mjs) ----
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/bundle-cli.mjs ./scripts/
RUN npm run build

# ---- prod-deps: production dependencies only, nothing of the compiler or the test tools ----
FROM node:24-trixie-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime: production dependencies, compiled code, declared pipelines and config ----
FROM node:24-trixie-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app

COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The run pages' script, stylesheet and icon, served as they are (no front-end build).
COPY assets ./assets
# The JSON Schemas of the OpenLineage facets, which serve answers at /schemas/openlineage/.
COPY schemas ./schemas
# jobs/*.yaml (JOBS_DIR defaults to ./jobs) and config/*.yaml (read from ./config).
COPY jobs ./jobs
COPY config ./config

# A writable place for local outputs (`--out /app/runs`); everything else stays root-owned, read-only.
RUN mkdir -p /app/runs && chown node:node /app/runs

USER node
# serve (8080), worker --metrics-port (9464), simulate (47334).
EXPOSE 8080 9464 47334
# The command itself, not `node dist/cli.js`: its first line carries the V8 settings it runs with.
ENTRYPOINT ["/app/dist/cli.js"]
CMD ["worker"]
