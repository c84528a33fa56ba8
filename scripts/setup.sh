#!/usr/bin/env bash
# Sets up a fresh Debian machine (as root) for kube-proxy-ts: the kernel's own tools from Debian, kubectl when the
# machine has none, the npm dependencies, and a build. Safe to run again. Says what is missing when it cannot fix it.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
command -v iptables-restore >/dev/null 2>&1 || need_apt+=(iptables)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v conntrack >/dev/null 2>&1 || need_apt+=(conntrack)
command -v kubectl >/dev/null 2>&1 || need_apt+=(kubernetes-client)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)

if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing Debian packages: ${need_apt[*]}" >&2
    echo "setup: install them as root (apt-get install ${need_apt[*]}); kernel tests and the lab need them" >&2
  else
    echo "setup: installing from Debian: ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
fi

if ! command -v node >/dev/null 2>&1; then
  echo "setup: Node.js (>= 20) is required and not installed" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "setup: Node.js >= 20 is required, found $(node --version)" >&2
  exit 1
fi

echo "setup: installing npm dependencies"
npm ci --no-audit --no-fund --loglevel=error
echo "setup: building"
npm run --silent build
echo "setup: done"
