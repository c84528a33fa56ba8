#!/usr/bin/env bash
# Seed 003's long soaks (issue 27): for each of nftables (upstream layout), nftables (flat layout) and
# iptables-legacy with a competing xtables lock holder, a lab of its own comes up, `lab soak` runs against it with
# churn, proxy restarts and API server outages, and the lab is stopped. Each report is kept as OUT/MODE.json (the
# `-o json` report) and OUT/MODE.svg (its picture), with OUT/MODE.txt (the text report); every kube-proxy run's log
# is copied out of the lab before it stops (the path is printed).
#   bash scripts/soak-long.sh [--duration 15m] [--out docs/soak] [--only nftables|nftables-flat|iptables-legacy]
# Exit status: 0 when every soak's guarantees held, 1 otherwise. Takes the duration three times, plus a minute or
# two per lab. Stop any lab you run first: these labs use their own state directories and names.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

duration=15m
out=docs/soak
only=""
services=200
churn=20
rate=50
restart_every=60s
outage_every=90s
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="${2:?--duration D}"; shift 2 ;;
    --out) out="${2:?--out DIR}"; shift 2 ;;
    --only) only="${2:?--only MODE}"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak-long: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -f packages/lab/dist/cli/main.js ] || npm run --silent build
lab=(node packages/lab/dist/cli/main.js)
mkdir -p "$out"

up_pid=""
state=""
stop_lab() {
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
    kill -TERM "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
  up_pid=""
  if [ -n "$state" ]; then "${lab[@]}" down --state-dir "$state" >/dev/null 2>&1 || true; fi
  state=""
}
trap stop_lab EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failed=0
soak_one() {
  local name="$1" up_flags="$2" soak_flags="$3"
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return 0; fi
  state="$(mktemp -d /tmp/kpts-soak-long.XXXXXX)/state"
  local log="${state%/state}/lab-up.log"
  echo "soak-long: $name: lab up $up_flags ($(date -u +%H:%M:%S))"
  # shellcheck disable=SC2086
  "${lab[@]}" up --nodes 2 $up_flags --state-dir "$state" --prefix kptslong >"$log" 2>&1 &
  up_pid=$!
  for _ in $(seq 1 600); do
    grep -q 'Walkthrough:' "$log" 2>/dev/null && break
    kill -0 "$up_pid" 2>/dev/null || { echo "soak-long: $name: lab up failed:" >&2; tail -20 "$log" >&2; failed=1; up_pid=""; return 0; }
    sleep 1
  done
  echo "soak-long: $name: lab soak --duration $duration --services $services --churn $churn --rate $rate $soak_flags"
  local code=0
  # shellcheck disable=SC2086
  "${lab[@]}" soak --state-dir "$state" --duration "$duration" --services "$services" --churn "$churn" \
    --rate "$rate" --restart-proxy-every "$restart_every" --apiserver-outage-every "$outage_every" $soak_flags \
    --svg "$out/$name.svg" -o json >"$out/$name.json" 2>"${state%/state}/soak.log" || code=$?
  node --input-type=module -e '
    import { readFileSync } from "node:fs";
    const { formatReport } = await import(process.cwd() + "/packages/lab/dist/soak/report.js");
    process.stdout.write(formatReport(JSON.parse(readFileSync(process.argv[1], "utf8"))) + "\n");
  ' "$out/$name.json" >"$out/$name.txt" 2>/dev/null || cp "${state%/state}/soak.log" "$out/$name.txt"
  echo "soak-long: $name: exit $code; $(grep -E '^guarantees' "$out/$name.txt" || tail -1 "$out/$name.txt")"
  [ "$code" = 0 ] || failed=1
  # Every run's kube-proxy log (the lab keeps one file per container run), for a failure to be read afterwards.
  local logs="${state%/state}/kube-proxy-logs"
  mkdir -p "$logs"
  find "$state/pods" -path '*kube-proxy*' -name '*.log' 2>/dev/null | while read -r f; do
    cp "$f" "$logs/$(echo "${f#"$state/pods/"}" | tr / _)"
  done || true
  echo "soak-long: $name: kube-proxy logs of every run in $logs"
  stop_lab
}

soak_one nftables "--mode nftables" ""
soak_one nftables-flat "--mode nftables --nftables-layout flat" ""
soak_one iptables-legacy "--mode iptables --iptables legacy" "--competing-lock-holder"
exit "$failed"
