#!/usr/bin/env bash
# The whole suite on a busy machine, as CI's 2-core machine can be: Debian's stress-ng keeps one CPU hog per core
# (--cpu N, default: the number of cores) running beside `bash scripts/test.sh`, for --runs N runs in a row
# (default 3). Prints each run's counts and time, and a summary; exits non-zero if any run failed.
#   bash scripts/test-under-load.sh [--runs N] [--cpu N] [TEST FILTER …]
# Filters narrow each run as scripts/test.sh's do. Each run's whole output is kept under the log directory it
# names (KPTS_LOAD_LOG_DIR, default a new one under /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

runs=3
cpu="$(nproc)"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs N}"; shift 2 ;;
    --cpu) cpu="${2:?--cpu N}"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
case "$runs$cpu" in *[!0-9]*) echo "test-under-load: --runs and --cpu take whole numbers" >&2; exit 2 ;; esac

if ! command -v stress-ng >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-under-load: installing stress-ng from Debian"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >/dev/null
  else
    echo "test-under-load: stress-ng is missing (apt-get install stress-ng, as root)" >&2
    exit 1
  fi
fi

log_dir="${KPTS_LOAD_LOG_DIR:-$(mktemp -d /tmp/kpts-test-under-load.XXXXXX)}"
mkdir -p "$log_dir"
stress_pid=""
stop_stress() {
  if [ -n "$stress_pid" ]; then
    kill -- "-$stress_pid" 2>/dev/null || kill "$stress_pid" 2>/dev/null || true
    wait "$stress_pid" 2>/dev/null || true
    stress_pid=""
  fi
}
trap stop_stress EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# In a process group of its own, so that stopping it stops every worker it forked.
setsid stress-ng --cpu "$cpu" --cpu-method all --metrics-brief --timeout 0 >"$log_dir/stress-ng.log" 2>&1 &
stress_pid=$!
echo "test-under-load: stress-ng --cpu $cpu running (pid $stress_pid); $runs runs of the suite; logs in $log_dir"

failed=0
summary=()
for i in $(seq 1 "$runs"); do
  log="$log_dir/run-$i.log"
  started=$(date +%s)
  echo "test-under-load: run $i of $runs ($(date -u +%H:%M:%S), load average $(cut -d' ' -f1-3 /proc/loadavg))"
  set +e
  bash scripts/test.sh "$@" >"$log" 2>&1
  code=$?
  set -e
  took=$(( $(date +%s) - started ))
  counts=$(grep -E '^ℹ (tests|pass|fail|skipped) ' "$log" | awk '{printf "%s %s, ", $2, $3}' | sed 's/, $//')
  line="run $i: exit $code, ${counts:-no test counts (see $log)}, $((took / 60)) min $((took % 60)) s"
  echo "test-under-load: $line"
  summary+=("$line")
  if [ "$code" != 0 ]; then
    failed=$((failed + 1))
    grep -A12 -E '^✖ failing tests' "$log" | head -40 || true
  fi
done
stop_stress

echo
echo "test-under-load: stress-ng --cpu $cpu beside the suite, $(nproc) cores:"
printf '  %s\n' "${summary[@]}"
if [ "$failed" -gt 0 ]; then
  echo "test-under-load: $failed of $runs runs failed (logs in $log_dir)" >&2
  exit 1
fi
echo "test-under-load: all $runs runs passed"
