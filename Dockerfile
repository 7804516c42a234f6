# The loyalty service: `loyalty serve` (role from the command line, configuration from the environment).
# Node 26 is the current LTS; the package itself keeps running on Node 20 and later (engines).
FROM node:26.10.0-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `prepare` builds, and the sources are not here yet: install first, build below.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY dashboard ./dashboard
RUN npm run build

FROM node:26.10.0-slim
ENV NODE_ENV=production
# The embedded store (no DATABASE_URL) lives here: owned by the non-root user, so a plain
# `docker run` works; mount a volume on it to keep the data.
ENV LOYALTY_DATA_DIR=/app/data
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN ln -s /app/dist/cli.js /usr/local/bin/loyalty && chmod +x /app/dist/cli.js \
  && mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node
EXPOSE 3000
# Every role answers /healthz on PORT: `serve --role workers` serves it (with /readyz and /metrics,
# no API) and answers 503 when its projection or webhook delivery loop has stalled.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["loyalty", "serve"]
