# Canopy service image: Node 26 (Active LTS), production dependencies only, non-root, tini as PID 1.
# scripts/image-check.mjs replays these steps outside Docker in CI (no Docker engine runs there).

FROM node:26-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY web ./web
RUN npm run build

FROM node:26-slim
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production CANOPY_HOST=0.0.0.0 CANOPY_PORT=8080 CANOPY_TREES=/app/trees
# glibc's malloc raises its mmap threshold (up to 32 MB) after a large block is freed, so crash-recovery
# checkpoints (megabytes each, made and freed every few seconds) then come from fragmenting heap arenas:
# fixed at 128 KiB, large blocks go back to the system when freed (1,000,000 agents: ~1.75 → ~1.35 KB of RSS each,
# docs/capacity.md, "A million agents").
ENV MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/web ./dist/web
COPY trees ./trees
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.CANOPY_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--initial-old-space-size=128", "--min-semi-space-size=16", "--v8-pool-size=2", "dist/src/service/main.js"]
