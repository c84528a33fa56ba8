#!/usr/bin/env bash
# The README's first command: set up this machine (Debian packages, npm dependencies, build), then run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/setup.sh
exec npm start -- "$@"
