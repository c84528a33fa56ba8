#!/usr/bin/env bash
# Seed 003's four remedies, measured by one soak each on one lab (issue 30): the incident's setting (iptables on
# legacy iptables, heavy churn, traffic, a competing xtables lock holder on every node) with
#   1. iptables mode, minSyncPeriod 1s          (the lab's start: what the incident ran)
#   2. iptables mode tuned: minSyncPeriod 10s, syncPeriod 60s
#   3. IPVS mode (ipvs.minSyncPeriod 1s, syncPeriod 30s, scheduler rr)
#   4. nftables mode
# Each change is made as seed 003 writes it: the kube-proxy ConfigMap edited, then
# `kubectl -n kube-system rollout restart ds kube-proxy` and `rollout status`. IPVS needs a kernel with IP_VS
# (this project's host kernel has none): `--in-guest` runs the whole script in a QEMU guest on Debian's kernel
# (npm run guest:run), every remedy on the same kernel and the same emulated machine.
#   bash scripts/soak-remedies.sh [--in-guest] [--duration 2m] [--services 20] [--churn 2] [--rate 20]
#                                 [--out docs/soak/remedies] [--time-scale N]
# (--time-scale: lab up's, for a slow host; --in-guest sets 5: everything runs under emulation there)
# Writes OUT/N-NAME.json, .txt and .svg per soak, and OUT/remedies.md (the table) and OUT/remedies.svg (the
# picture). Exit status 0 when every soak ran (a soak whose guarantees did not hold still counts as run: its
# numbers are the point), 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=2m
services=20
churn=2
rate=20
out=docs/soak/remedies
in_guest=0
time_scale=1
while [ $# -gt 0 ]; do
  case "$1" in
    --in-guest) in_guest=1; shift ;;
    --duration) duration="${2:?--duration D}"; shift 2 ;;
    --services) services="${2:?--services N}"; shift 2 ;;
    --churn) churn="${2:?--churn N}"; shift 2 ;;
    --rate) rate="${2:?--rate N}"; shift 2 ;;
    --out) out="${2:?--out DIR}"; shift 2 ;;
    --time-scale) time_scale="${2:?--time-scale N}"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak-remedies: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -f packages/lab/dist/cli/main.js ] || npm run --silent build

if [ "$in_guest" = 1 ]; then
  # Two virtual CPUs (a lab is many processes), memory for two nodes' pods; the output directory shared.
  exec npm run --silent guest:run -- --cpus 2 --memory 6144 --share "$out" -- \
    bash scripts/soak-remedies.sh --duration "$duration" --services "$services" --churn "$churn" \
    --rate "$rate" --out "$out" --time-scale 5
fi

. scripts/env.sh
lab=(node packages/lab/dist/cli/main.js)
state="$(mktemp -d /tmp/kpts-remedies.XXXXXX)/state"
kubeconfig="$state/kubeconfig"
k() { kubectl --kubeconfig "$kubeconfig" "$@"; }
up_pid=""
stop_lab() {
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
    kill -TERM "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
  "${lab[@]}" down --state-dir "$state" >/dev/null 2>&1 || true
}
trap stop_lab EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
say() { echo "soak-remedies [$(date -u +%H:%M:%S)]: $*"; }

# Seed 003's check of the kernel, on the kernel the nodes share.
say "kernel $(uname -r)"
modprobe -a ip_vs ip_vs_rr ip_vs_wrr ip_vs_sh nf_conntrack 2>/dev/null || true
lsmod | grep -E "ip_vs|nf_conntrack" || say "lsmod shows no ip_vs: the IPVS soak will fail at its start"

say "lab up --nodes 2 --mode iptables --iptables legacy --time-scale $time_scale (its log: $out/lab-up.log)"
"${lab[@]}" up --nodes 2 --mode iptables --iptables legacy --time-scale "$time_scale" --state-dir "$state" \
  --prefix kptsrem >"$out/lab-up.log" 2>&1 &
up_pid=$!
for _ in $(seq 1 1800); do
  grep -q 'Walkthrough:' "$out/lab-up.log" 2>/dev/null && break
  kill -0 "$up_pid" 2>/dev/null || { say "lab up failed:"; tail -30 "$out/lab-up.log"; exit 1; }
  sleep 1
done
grep -q 'Walkthrough:' "$out/lab-up.log" || { say "lab up did not finish in 30 minutes"; tail -30 "$out/lab-up.log"; exit 1; }
k get nodes -o wide

# The ConfigMap's config.conf through SED_SCRIPT, replaced, and the DaemonSet restarted (seed 003's steps).
reconfigure() {
  local sed_script="$1" conf="$state/config.conf"
  k -n kube-system get configmap kube-proxy -o jsonpath='{.data.config\.conf}' >"$conf"
  sed -i "$sed_script" "$conf"
  k -n kube-system create configmap kube-proxy --from-file=config.conf="$conf" --dry-run=client -o yaml |
    k label --local -f - app=kube-proxy -o yaml | k replace -f -
  k -n kube-system rollout restart ds kube-proxy
  k -n kube-system rollout status ds kube-proxy --timeout=20m
  grep -E '^mode:|^  (minSyncPeriod|syncPeriod):' "$conf" | tr '\n' ' '
  echo
}

failed=0
n=0
soak() {
  local name="$1"
  n=$((n + 1))
  local base="$out/$n-$name"
  say "$n. $name: lab soak --duration $duration --services $services --churn $churn --rate $rate --competing-lock-holder"
  local code=0
  "${lab[@]}" soak --state-dir "$state" --duration "$duration" --services "$services" --churn "$churn" \
    --rate "$rate" --competing-lock-holder --svg "$base.svg" -o json >"$base.json" 2>"$base.log" || code=$?
  if [ ! -s "$base.json" ]; then
    say "$n. $name: the soak did not report (exit $code):"
    tail -20 "$base.log"
    failed=1
    return 0
  fi
  node --input-type=module -e '
    import { readFileSync } from "node:fs";
    const { formatReport } = await import(process.cwd() + "/packages/lab/dist/soak/report.js");
    process.stdout.write(formatReport(JSON.parse(readFileSync(process.argv[1], "utf8"))));
  ' "$base.json" >"$base.txt"
  say "$n. $name: exit $code; $(head -1 "$base.txt"); $(grep -E '^guarantees' "$base.txt")"
}

soak iptables-minsync-1s
say "2. tuning iptables mode: minSyncPeriod 10s, syncPeriod 60s"
reconfigure '/^iptables:/,/^[a-z]/{s/minSyncPeriod: .*/minSyncPeriod: 10s/;s/^  syncPeriod: .*/  syncPeriod: 60s/}'
soak iptables-tuned
say "3. mode: ipvs"
reconfigure 's/^mode: .*/mode: ipvs/'
ip -n kptsrem-control-plane -br addr show kube-ipvs0 || true
soak ipvs
say "4. mode: nftables"
reconfigure 's/^mode: .*/mode: nftables/'
soak nftables

node --input-type=module -e '
  import { readFileSync, readdirSync, writeFileSync } from "node:fs";
  import { join } from "node:path";
  const { remedyRow, remediesTable, remediesSvg } = await import(process.cwd() + "/packages/lab/dist/soak/compare.js");
  const [dir, title] = process.argv.slice(1);
  const labels = { "iptables-minsync-1s": "1. iptables, minSyncPeriod 1s", "iptables-tuned": "2. iptables tuned",
    ipvs: "3. IPVS", nftables: "4. nftables" };
  const rows = readdirSync(dir).filter((f) => /^\d-.*\.json$/.test(f)).sort().map((f) => {
    const name = f.replace(/^\d-/, "").replace(/\.json$/, "");
    return remedyRow({ label: labels[name] ?? name, report: JSON.parse(readFileSync(join(dir, f), "utf8")) });
  });
  writeFileSync(join(dir, "remedies.md"), remediesTable(rows));
  writeFileSync(join(dir, "remedies.svg"), remediesSvg(rows, title));
  process.stdout.write(remediesTable(rows));
' "$out" "seed 003's remedies: $services Services, churn $churn/s, $rate req/s, a competing xtables lock holder, kernel $(uname -r)"
say "table and picture in $out (remedies.md, remedies.svg)"
exit "$failed"
