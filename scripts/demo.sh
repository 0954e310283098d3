#!/usr/bin/env bash
# The main job (README): build, start a local chain with our contracts, migrate a database, seed
# a demo organisation, start a local SMTP catcher, the api and the worker, and print the URLs, the merchant key and a
# curl line that creates a checkout session. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-env.sh
export PATH="$PWD/node_modules/.bin:$PATH"
mkdir -p .local

export PORT="${PORT:-3000}"
export API_BASE_URL="${API_BASE_URL:-http://localhost:$PORT}"
export CHECKOUT_BASE_URL="${CHECKOUT_BASE_URL:-$API_BASE_URL}"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:${PGPORT:-5432}/payments_demo}"
export LOG_LEVEL="${LOG_LEVEL:-warn}"
export WEBHOOK_ALLOW_HTTP="${WEBHOOK_ALLOW_HTTP:-true}"
export WEBHOOK_ALLOW_PRIVATE="${WEBHOOK_ALLOW_PRIVATE:-true}"
export MAIL_CATCHER_PORT="${MAIL_CATCHER_PORT:-1025}"
export SMTP_URL="${SMTP_URL:-smtp://127.0.0.1:$MAIL_CATCHER_PORT}"
export SMTP_FROM="${SMTP_FROM:-Demo Shop <billing@demo.localhost>}"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -f .local/anvil.pid ]; then kill "$(cat .local/anvil.pid)" 2>/dev/null || true; rm -f .local/anvil.pid; fi
}
trap cleanup EXIT INT TERM

echo "== build"
npm run build --silent

echo "== local chain"
node scripts/chain-local.mjs --detach
set -a; . .local/chain.env; set +a

{ cat .local/chain.env; echo "DATABASE_URL=$DATABASE_URL"; echo "API_BASE_URL=$API_BASE_URL"; echo "CHECKOUT_BASE_URL=$CHECKOUT_BASE_URL"; } > .local/demo.env

echo "== database $DATABASE_URL"
node dist/src/database/migrate.js

echo "== demo organisation"
seed=$(node dist/src/cli.js demo:seed --json)
echo "$seed" > .local/demo.json

echo "== mail catcher (invoice emails land in .local/mail/)"
node scripts/mail-catcher.mjs > .local/mail.log 2>&1 & pids+=($!)

echo "== api and worker"
node dist/src/main.js > .local/api.log 2>&1 & pids+=($!)
if [ -f dist/src/worker.js ]; then node dist/src/worker.js > .local/worker.log 2>&1 & pids+=($!); fi
for _ in $(seq 1 60); do curl -sf "$API_BASE_URL/health/ready" >/dev/null && break; sleep 0.5; done
curl -sf "$API_BASE_URL/health/ready" >/dev/null || { echo "api did not become ready; see .local/api.log"; tail -20 .local/api.log; exit 1; }

node -e '
const s = JSON.parse(process.argv[1]);
console.log(`
Payments control plane is running.

  Console       ${s.apiUrl}/console   (sign in with a browser wallet: keys, agents, webhooks, payments)
  API           ${s.apiUrl}/api/v1
  Swagger UI    ${s.swaggerUrl}
  MCP           ${(process.env.MCP_BASE_URL || s.apiUrl).replace(/\/$/, '')}/mcp   (tools for AI agents; same keys)
  Pay pages     ${s.checkoutBaseUrl}/checkout/<checkoutId>   invoices: ${s.checkoutBaseUrl}/invoices/<invoiceId>
  Mail catcher  ${process.env.SMTP_URL}   invoice emails land in .local/mail/ (one line each in .local/mail.log)
  Worker        http://localhost:${process.env.WORKER_PORT || 3100}/health/ready   (Bull Board: /admin/queues)
  Chain (anvil) ${process.env.RPC_URL}   USDC ${process.env.USDC_ADDRESS}   escrow ${process.env.ESCROW_ADDRESS}

  Organisation  ${s.handle} (${s.organizationId})
  Merchant key  ${s.merchantKey}
  Buyer key     ${s.buyerKey}   (the demo buyer wallet ${s.buyerAddress}: reports release, cancel, dispute)

Create a checkout session:
  ${s.curl}

Fund it from the demo buyer wallet on the local chain:
  npm run cli -- demo:pay <checkoutId>

Verify the business (KYB, README "Verify the business"): the wallet check from the demo payout
wallet, then the identity check on the sandbox page:
  npm run cli -- demo:verify-wallet ${s.organizationId}
  curl -s -X POST ${s.apiUrl}/api/v1/verification/start -H "X-Api-Key: ${s.merchantKey}"   (open verificationUrl)

Logs: .local/api.log, .local/worker.log, .local/mail.log. Ctrl-C stops everything.
`)' "$seed"
wait -n "${pids[@]}"
