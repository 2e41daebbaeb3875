# The service's image: the build stage compiles the TypeScript and packs what a production install
# needs (package.json's "files"); the runtime stage installs only the dependencies and runs node on dist/.
# docker build -t landing-site-partner-api .
# docker run -p 3000:3000 -v lsp-data:/data landing-site-partner-api
# The steps of the runtime stage are followed outside a container by test/slow/production-install.test.ts.

FROM node:20-bookworm-slim AS build
WORKDIR /build
# the dependencies first, in a layer of their own: no lifecycle scripts yet (the sources are not here)
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# npm pack runs prepare (the compiler) and packs the files a production install needs
RUN npm pack --pack-destination /tmp \
    && mkdir /app \
    && tar -xzf /tmp/landing-site-partner-api-*.tgz -C /app --strip-components=1 \
    && cp package-lock.json /app/

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app ./
# better-sqlite3 installs its prebuilt binary; on a platform without one, this stage also needs
# python3, make and g++ to compile it
RUN npm ci --omit=dev --no-audit --no-fund \
    && npm cache clean --force \
    && mkdir -p /data \
    && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# the first boot of an empty volume generates the sandbox dataset before the port opens
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# node itself, not npm: it gets SIGTERM (docker stop) and SIGHUP (reload) and closes gracefully
CMD ["node", "dist/src/server.js"]
