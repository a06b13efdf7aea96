# Build stage: compile TypeScript with the full dependency tree (npm ci runs the `prepare`
# build, so the sources must be there first). npm ci also links the client package, an npm
# workspace, and the build builds it, so its manifest and sources come first too.
FROM node:24-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY packages/client/package.json packages/client/tsconfig.json ./packages/client/
COPY packages/client/src ./packages/client/src
COPY src ./src
# The build bundles the CLI (scripts/bundle.ts) and prepares the embedded template from the
# migrations.
COPY scripts/bundle.ts scripts/bundle-options.ts ./scripts/
COPY migrations ./migrations
RUN npm ci --engine-strict --no-audit --no-fund && npm prune --omit=dev

# Runtime stage: compiled JavaScript, production dependencies, migrations and templates, as a
# non-root user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
COPY --chown=node:node migrations ./migrations
COPY --chown=node:node views ./views
USER node
EXPOSE 3000
# Every process kind (start, serve, worker) answers /healthz on its metrics listener, so one check
# fits them all. It stays on the container's loopback unless METRICS_HOST says otherwise.
ENV HOST=0.0.0.0 PORT=3000 METRICS_PORT=9464
HEALTHCHECK --interval=30s --timeout=5s CMD node -e "fetch('http://127.0.0.1:'+process.env.METRICS_PORT+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# The same Node flag as `npm start`: V8 collects sooner and keeps the heap nearer its live size.
ENTRYPOINT ["node", "--heap-growing-percent=40", "dist/svc.mjs"]
CMD ["start"]
