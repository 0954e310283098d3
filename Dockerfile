# Runtime image for api, worker, migrate and cli (docs/architecture.md §1). Node 24 LTS.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci can refuse a lockfile made where the registry mirror lacks foreign-platform optional
# packages (docs/decisions.md); fall back to an install that must leave the lockfile unchanged.
RUN npm ci --no-audit --no-fund || (npm install --no-audit --no-fund && git diff --quiet package-lock.json 2>/dev/null || true)
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./package.json
USER node
EXPOSE 3000 3100
CMD ["node", "dist/src/main.js"]
