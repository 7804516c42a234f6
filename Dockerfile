# The loyalty service: `loyalty serve` (role from the command line, configuration from the environment).
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `prepare` builds, and the sources are not here yet: install first, build below.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY dashboard ./dashboard
RUN npm run build

FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN ln -s /app/dist/cli.js /usr/local/bin/loyalty && chmod +x /app/dist/cli.js
USER node
EXPOSE 3000
CMD ["loyalty", "serve"]
