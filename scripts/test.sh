#!/usr/bin/env bash
# The README's test command: set up what is missing (idempotent), then the whole suite (npm test).
# Arguments narrow the run to test files whose path contains one of them.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
if [ ! -d node_modules ] || [ ! -x node_modules/.bin/tsx ] || ! command -v nft >/dev/null 2>&1; then
  bash scripts/setup.sh
fi
exec npm test -- "$@"
