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
command -v nfacct >/dev/null 2>&1 || need_apt+=(nfacct)
command -v kubectl >/dev/null 2>&1 || need_apt+=(kubernetes-client)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v modprobe >/dev/null 2>&1 || need_apt+=(kmod)
# IPVS mode (issue 30): ipset for its sets, ipvsadm to read the virtual servers back (tests, doctor, operators).
command -v ipset >/dev/null 2>&1 || need_apt+=(ipset)
command -v ipvsadm >/dev/null 2>&1 || need_apt+=(ipvsadm)
# The lab web view's browser tests drive Debian's chromium (playwright-core never downloads a browser).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# The node image (scripts/image.sh) and the OCI runtime that runs it (its tests, `lab up --image`).
command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
command -v umoci >/dev/null 2>&1 || need_apt+=(umoci)
command -v runc >/dev/null 2>&1 || need_apt+=(runc)
# Guests on Debian's kernel (packages/lab/src/vm/): QEMU (TCG emulation when there is no KVM), busybox-static and
# cpio for the generated initramfs. The kernel is not installed: the first guest fetches it (apt-get download, cached
# under /var/cache/kube-proxy-ts/vm).
command -v qemu-system-x86_64 >/dev/null 2>&1 || need_apt+=(qemu-system-x86)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need_apt+=(busybox-static)
command -v cpio >/dev/null 2>&1 || need_apt+=(cpio)

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

# Node.js >= 20. Debian 12's own nodejs is 18: when the machine has no Node >= 20, Debian's npm installs one from
# the npm registry (the `node` package, whose platform build ships inside a registry package) under .tools/, and
# scripts/env.sh puts it first on PATH for every script.
. scripts/env.sh
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if ! command -v node >/dev/null 2>&1 || [ "$(node_major)" -lt 20 ]; then
  if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "setup: installing Debian's nodejs and npm (to fetch Node.js 20)"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
      echo "setup: Node.js >= 20 is required; install it, or Debian's npm so setup can fetch it" >&2
      exit 1
    fi
  fi
  echo "setup: installing Node.js 20 from the npm registry into .tools/node"
  npm install --prefix .tools/node --no-save --no-audit --no-fund --loglevel=error node@20
  . scripts/env.sh
  if [ "$(node_major)" -lt 20 ]; then
    echo "setup: Node.js >= 20 is required, still found $(node --version 2>/dev/null || echo none)" >&2
    exit 1
  fi
fi

# The lab's pod bridges need bridged frames to pass netfilter (br_netfilter), as a CNI bridge does.
if [ ! -d /proc/sys/net/bridge ]; then
  if [ "$(id -u)" = 0 ] && command -v modprobe >/dev/null 2>&1 && modprobe br_netfilter; then
    echo "setup: loaded br_netfilter"
  else
    echo "setup: the br_netfilter module is not loaded (modprobe br_netfilter as root); the lab and kernel tests need it" >&2
  fi
fi

echo "setup: installing npm dependencies"
npm ci --no-audit --no-fund --loglevel=error
echo "setup: building"
npm run --silent build

# The CLI on PATH, as every banner and doc types it: kube-proxy-ts (the agent package's bin) and
# kube-proxy-ts-lab (the lab package's, which `kube-proxy-ts lab …` runs). Each is a small wrapper that runs this
# checkout's build with the Node.js found above and, for the agent, the V8 flags the agent is measured with
# (AGENT_NODE_FLAGS, read from the build itself).
bin_dir="${KPTS_BIN_DIR:-/usr/local/bin}"
if [ -w "$bin_dir" ] || { [ "$(id -u)" = 0 ] && mkdir -p "$bin_dir"; }; then
  node_bin="$(command -v node)"
  repo="$(pwd)"
  flags="$(node --input-type=module -e "const m = await import('$repo/packages/agent/dist/util/node-flags.js'); console.log(m.AGENT_NODE_FLAGS.join(' '))")"
  write_wrapper() { # NAME, then what follows `exec` in the wrapper
    local name="$1"
    shift
    printf '#!/bin/sh\n# Written by scripts/setup.sh of the kube-proxy-ts checkout at %s.\nexec %s "$@"\n' "$repo" "$*" \
      >"$bin_dir/$name.tmp"
    chmod 0755 "$bin_dir/$name.tmp"
    mv -f "$bin_dir/$name.tmp" "$bin_dir/$name"
  }
  write_wrapper kube-proxy-ts "'$node_bin'" "$flags" "'$repo/packages/agent/dist/cli/main.js'"
  write_wrapper kube-proxy-ts-lab "'$node_bin'" "'$repo/packages/lab/dist/cli/main.js'"
  echo "setup: kube-proxy-ts and kube-proxy-ts-lab are in $bin_dir"
else
  echo "setup: cannot write $bin_dir: run packages/agent/dist/cli/main.js (and packages/lab/dist/cli/main.js) yourself" >&2
fi
echo "setup: done"
