#!/usr/bin/env bash
# Builds the node agent's OCI image with no container daemon, from Debian's packages and the npm registry only:
#
#   bash scripts/image.sh [--out FILE] [--package TGZ]
#
# The root file system is Debian 12 (mmdebstrap, the essential set plus nftables, iptables with both back ends,
# conntrack and ca-certificates, no apt), Node.js from the npm registry's node-linux-* package, and the agent's npm
# tarball (--package, or `npm pack` of packages/agent) with its production dependencies under /opt/kube-proxy-ts.
# umoci makes the OCI layout and one layer; the output is a tar of that layout (an "oci-archive" for skopeo and
# podman load; containerd: `ctr -n k8s.io images import --base-name NAME FILE`).
#
# Reproducible: the same inputs (tarball, Node.js version, the mirror's packages, SOURCE_DATE_EPOCH) give the same
# layer and manifest digests. SOURCE_DATE_EPOCH is the environment's, else the last commit's time; npm resolves the
# dependencies as the registry was at that time (--before) when it can. Runs as root: mmdebstrap --mode=root and
# chroot need it, and umoci records the files' owners as they are.
set -euo pipefail

# The Node.js in the image: the version this repo's machines run (setup.sh's node@20 resolves to it); change both
# together. KPTS_IMAGE_NODE_VERSION overrides it for a one-off build.
NODE_VERSION="${KPTS_IMAGE_NODE_VERSION:-20.20.2}"
# Debian packages on top of the essential set (which has no apt). libstdc++6: Node.js's official build links it.
DEB_PACKAGES=libstdc++6,nftables,iptables,conntrack,ca-certificates
# The host's apt sources (deb822) are pasted into mmdebstrap as they are: the image comes from the mirror this
# machine is configured for, bookworm plus its updates and security suites.
APT_SOURCES="${KPTS_IMAGE_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}"

usage() {
  echo "usage: bash scripts/image.sh [--out FILE] [--package TGZ]" >&2
  echo "  --package TGZ  the agent's npm tarball (default: npm pack --workspace packages/agent)" >&2
  echo "  --out FILE     the OCI archive to write (default: dist/image/kube-proxy-ts-VERSION.oci.tar)" >&2
}

out=""
package=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a file}"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --package) package="${2:?--package needs a tarball}"; shift 2 ;;
    --package=*) package="${1#--package=}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "image: unknown argument: $1" >&2; usage; exit 2 ;;
  esac
done

# Paths given are the caller's (relative to where it runs); the rest of the script runs at the repo's root.
[ -z "$out" ] || out="$(realpath -m -- "$out")"
[ -z "$package" ] || package="$(realpath -m -- "$package")"
cd "$(dirname "$0")/.."
. scripts/env.sh

fail() {
  echo "image: $*" >&2
  exit 1
}

# Each tool with the Debian package that brings it, so a missing one says what to install.
for tool in mmdebstrap:mmdebstrap umoci:umoci node:nodejs npm:npm tar:tar; do
  command -v "${tool%%:*}" >/dev/null 2>&1 ||
    fail "${tool%%:*} is missing: apt-get install ${tool#*:} (as root)"
done
[ "$(id -u)" = 0 ] || fail "must run as root (mmdebstrap --mode=root and umoci record the files' real owners)"
[ -r "$APT_SOURCES" ] || fail "no apt sources at $APT_SOURCES (set KPTS_IMAGE_APT_SOURCES to a deb822 file)"
grep -Eq '^Suites:.*\bbookworm\b' "$APT_SOURCES" ||
  fail "$APT_SOURCES has no bookworm suite: the image is Debian 12 (set KPTS_IMAGE_APT_SOURCES)"

case "$(dpkg --print-architecture)" in
  amd64) node_platform=linux-x64 ;;
  arm64) node_platform=linux-arm64 ;;
  *) fail "no Node.js package for this architecture ($(dpkg --print-architecture))" ;;
esac

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || true)"
  # A fixed time when there is no history (a source tarball): still reproducible, just not meaningful.
  SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1704067200}"
fi
export SOURCE_DATE_EPOCH
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"

started=$SECONDS
stage() { echo "image: [$((SECONDS - started))s] $*"; }

# Everything happens in one scratch directory, removed on exit, also on SIGINT and SIGTERM (which otherwise end
# bash without its EXIT trap). --one-file-system: should mmdebstrap die with /proc or /sys still mounted in the
# chroot, rm leaves them alone.
work="$(mktemp -d "${TMPDIR:-/tmp}/kpts-image.XXXXXX")"
trap 'rm -rf --one-file-system "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- The agent's npm tarball -------------------------------------------------------------------------------
if [ -z "$package" ]; then
  stage "packing packages/agent (npm pack)"
  mkdir "$work/pack"
  name="$(npm pack --workspace packages/agent --pack-destination "$work/pack" --loglevel=error | tail -n 1)" ||
    fail "npm pack --workspace packages/agent failed (run from a checkout with packages/agent, or pass --package)"
  package="$work/pack/$name"
fi
[ -f "$package" ] || fail "no agent tarball at $package"
tar -tzf "$package" package/dist/cli/main.js >/dev/null 2>&1 ||
  fail "$package has no package/dist/cli/main.js: build the agent first (npm run build)"
read -r pkg_name version < <(tar -xzOf "$package" package/package.json |
  node -e 'const p = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(p.name, p.version)')
[ "$pkg_name" = kube-proxy-ts ] || fail "$package is the package $pkg_name, not kube-proxy-ts"
out="${out:-$PWD/dist/image/kube-proxy-ts-$version.oci.tar}"
tag="v$version"
stage "agent $pkg_name@$version from $package; SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH ($created)"

# --- An empty image, unpacked: umoci's bundle whose rootfs the next stages fill ------------------------------
layout="$work/oci"
bundle="$work/bundle"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci unpack --image "$layout:$tag" "$bundle" >/dev/null
rmdir "$bundle/rootfs"
rootfs="$bundle/rootfs"

# --- Debian ----------------------------------------------------------------------------------------------------
# --variant=essential: Essential:yes only (no apt, no init); the merged-usr hook gives bookworm's /usr layout
# without the usrmerge package (which would bring perl). --force-unsafe-io: no fsync per file, the tree is packed
# and thrown away. Documentation, man pages and translations are removed afterwards rather than kept out with
# dpkg's path-exclude, which mmdebstrap then applies through a Python filter, package by package: 2.5x slower here.
stage "debian: mmdebstrap bookworm + ${DEB_PACKAGES//,/ }"
mmdebstrap --quiet --mode=root --format=directory --variant=essential \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --include="$DEB_PACKAGES" \
  --dpkgopt=force-unsafe-io \
  bookworm "$rootfs" "$APT_SOURCES" >"$work/mmdebstrap.log" 2>&1 || {
  tail -n 30 "$work/mmdebstrap.log" >&2
  fail "mmdebstrap failed (its log's end is above; is the mirror in $APT_SOURCES reachable?)"
}
find "$rootfs/usr/share/doc" -type f -not -name copyright -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs"/usr/share/{man,info,locale,lintian,bash-completion}

# --- Node.js -----------------------------------------------------------------------------------------------------
# The official build, as the npm registry's node-linux-* package ships it (npm checks its integrity): only the
# binary and its licence go into the image.
stage "node: node-$node_platform@$NODE_VERSION from the npm registry"
mkdir "$work/node"
node_tgz="$(npm pack "node-$node_platform@$NODE_VERSION" --pack-destination "$work/node" --loglevel=error |
  tail -n 1)" || fail "npm pack node-$node_platform@$NODE_VERSION failed"
tar -xzf "$work/node/$node_tgz" -C "$work/node" package/bin/node package/LICENSE
install -D -m 0755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
install -D -m 0644 "$work/node/package/LICENSE" "$rootfs/usr/local/share/doc/node/LICENSE"

# --- The agent ---------------------------------------------------------------------------------------------------
# The tarball's contents are the project, installed in place: /opt/kube-proxy-ts holds package.json (the agent
# reads its version there), dist/ and the production node_modules. --ignore-scripts: no install script runs
# (koffi's prebuilt binary comes in its platform package, an optional dependency that npm picks for this host).
# --before pins what the registry resolves (the dependencies' dependencies float) to the commit's time; a
# dependency newer than the last commit (an uncommitted bump) cannot resolve that way, so npm then resolves
# against the registry as it is now, and says so.
stage "agent: npm install --omit=dev into /opt/kube-proxy-ts"
app="$rootfs/opt/kube-proxy-ts"
mkdir -p "$app"
tar -xzf "$package" -C "$app" --strip-components=1 --no-same-owner
npm_install=(npm install --prefix "$app" --omit=dev --ignore-scripts --no-audit --no-fund --no-package-lock
  --no-update-notifier --loglevel=error)
if ! "${npm_install[@]}" --before="$created" >/dev/null 2>"$work/npm.err"; then
  echo "image: npm could not resolve the dependencies as of $created ($(grep -m1 -E 'ETARGET|ERR' "$work/npm.err" || true))" >&2
  echo "image: resolving against the registry as it is now: this image is not reproducible from the commit alone" >&2
  "${npm_install[@]}" >/dev/null || fail "npm install of the agent's dependencies failed"
fi
# Not needed at run time: type declarations and source maps (Node.js reads maps only with --enable-source-maps),
# koffi's musl build (the image is glibc), npm's own record of the install.
find "$app/node_modules" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete
rm -rf "$app"/node_modules/@koromix/koffi-*/musl_* "$app/node_modules/.package-lock.json"
[ -e "$app/node_modules/koffi/package.json" ] || fail "koffi is not among the installed dependencies"

# Same place and calling convention as upstream's /usr/local/bin/kube-proxy. The flags are AGENT_NODE_FLAGS
# (packages/agent/src/util/node-flags.ts): what runs on a node is what the bench measured.
cat >"$rootfs/usr/local/bin/kube-proxy-ts" <<'EOF'
#!/bin/sh
exec /usr/local/bin/node --max-semi-space-size=8 --no-allocation-site-pretenuring --heap-growing-percent=50 /opt/kube-proxy-ts/dist/cli/main.js "$@"
EOF
chmod 0755 "$rootfs/usr/local/bin/kube-proxy-ts"

# The image's own Node.js, koffi and libnftables together, and the entry point, run in the root file system
# (before the cleaning below empties /dev).
chroot "$rootfs" /usr/local/bin/node -e 'require("/opt/kube-proxy-ts/node_modules/koffi").load("libnftables.so.1")' ||
  fail "koffi did not load libnftables.so.1 with the image's Node.js"
agent_version="$(chroot "$rootfs" /usr/local/bin/kube-proxy-ts --version)" ||
  fail "/usr/local/bin/kube-proxy-ts --version failed in the root file system"
stage "checked: koffi loads libnftables.so.1; kube-proxy-ts --version says:"
# Ours, then the kernel tools the image carries, as each reports itself.
printf '%s\n' "$agent_version"

# --- What varies between two builds of the same inputs -----------------------------------------------------------
# The host's resolv.conf and hostname (the runtime mounts its own), apt's lists and sources (there is no apt),
# logs, caches, dpkg's backups, and every mtime past SOURCE_DATE_EPOCH (files the maintainer scripts wrote).
# /dev's nodes too: every runtime mounts its own /dev, and a layer with device nodes cannot be unpacked rootless.
stage "clean: logs, caches, host files; mtimes clamped to $created"
rm -rf "$rootfs/etc/resolv.conf" "$rootfs/etc/hostname" "$rootfs/etc/apt" "$rootfs/var/lib/apt" \
  "$rootfs/etc/dpkg/dpkg.cfg.d/99mmdebstrap"
find "$rootfs/var/log" "$rootfs/var/cache" "$rootfs/tmp" "$rootfs/run" "$rootfs/dev" -mindepth 1 -delete
rm -f "$rootfs"/var/lib/dpkg/*-old "$rootfs"/etc/*- "$rootfs/etc/.pwd.lock"
for f in "$rootfs/etc/machine-id" "$rootfs/var/lib/dbus/machine-id"; do
  if [ -e "$f" ]; then : >"$f"; fi
done
find "$rootfs" -xdev -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +

# --- The image ---------------------------------------------------------------------------------------------------
stage "layer: umoci repack"
umoci repack --image "$layout:$tag" \
  --history.created="$created" --history.author=kube-proxy-ts \
  --history.created_by="scripts/image.sh: debian bookworm ($DEB_PACKAGES), node $NODE_VERSION, $pkg_name@$version" \
  "$bundle"
labels=(
  "org.opencontainers.image.title=kube-proxy-ts"
  "org.opencontainers.image.description=Kubernetes' service proxy in TypeScript: the node agent"
  "org.opencontainers.image.version=$version"
  "org.opencontainers.image.revision=$revision"
  "org.opencontainers.image.created=$created"
  "org.opencontainers.image.licenses=Apache-2.0"
)
label_args=()
for l in "${labels[@]}"; do label_args+=(--config.label="$l" --manifest.annotation="$l"); done
umoci config --image "$layout:$tag" --no-history --created="$created" --author=kube-proxy-ts \
  --clear=config.entrypoint --clear=config.cmd --clear=config.env \
  --config.entrypoint=/usr/local/bin/kube-proxy-ts \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.workingdir=/ "${label_args[@]}"
# Each umoci step wrote a new manifest and config: keep only the blobs the tag reaches.
umoci gc --layout "$layout"

stage "archive: $out"
mkdir -p "$(dirname "$out")"
find "$layout" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
tar --sort=name --format=ustar --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --mode=u+rw,go+r,go-w -C "$layout" -cf "$out.tmp" blobs index.json oci-layout
mv "$out.tmp" "$out"

# The digests: the manifest's (what a registry or `skopeo inspect` names the image by) and the layer's.
node - "$layout" <<'EOF'
const fs = require('fs');
const layout = process.argv[2];
const blob = (d) => JSON.parse(fs.readFileSync(`${layout}/blobs/${d.replace(':', '/')}`, 'utf8'));
const desc = JSON.parse(fs.readFileSync(`${layout}/index.json`, 'utf8')).manifests[0];
const manifest = blob(desc.digest);
const config = blob(manifest.config.digest);
console.log(`image: manifest ${desc.digest}`);
console.log(`image: config   ${manifest.config.digest}`);
manifest.layers.forEach((l, i) => {
  const mib = (l.size / 1048576).toFixed(1);
  console.log(`image: layer    ${l.digest} (${mib} MiB; diff_id ${config.rootfs.diff_ids[i]})`);
});
EOF
size="$(stat -c %s "$out")"
stage "done: $out ($size bytes, $(numfmt --to=iec-i --suffix=B "$size")), tag $tag"
