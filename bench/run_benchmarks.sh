#!/usr/bin/env bash
# Paddock's API benchmarks: DescribeTaskDefinition and RegisterTaskDefinition throughput, the cost
# of a family with BIG_FAMILY revisions, and the same driver against moto for comparison.
# docs/benchmarks.md explains the figures and records a run.
#
#   bench/run_benchmarks.sh                        # everything, 1,000,000-revision family
#   BIG_FAMILY=100000 DURATION=5s bench/run_benchmarks.sh
#
# Environment:
#   CONNECTIONS   keep-alive connections (one driver thread each)           default 16
#   DURATION      length of each timed run                                  default 10s
#   WARMUP        untimed requests before each timed run                    default 500
#   SMALL_FAMILY  revisions in the family at the first big-family point     default 1000
#   BIG_FAMILY    revisions in the family at the second point (0 skips it)  default 1000000
#   REG_SAMPLE    registers timed at each big-family point (bounded by count so
#                 the family does not grow much while it is measured)       default 5000
#   SKIP_BUILD=1  use the binaries already in build/release
#   SKIP_MOTO=1   do not run the moto comparison
#   RESULTS       where the JSON lines go                                   default a temp file
#
# Every process this script starts is stopped by PID on exit; every load targets 127.0.0.1 and
# is bounded by a duration or a request count.
set -euo pipefail

CONNECTIONS=${CONNECTIONS:-16}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-500}
SMALL_FAMILY=${SMALL_FAMILY:-1000}
BIG_FAMILY=${BIG_FAMILY:-1000000}
REG_SAMPLE=${REG_SAMPLE:-5000}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build/release
PADDOCK=$BUILD/src/cli/paddock
LOAD=$BUILD/bench/paddock_load
WORK=$(mktemp -d -t paddock-bench.XXXXXX)
RESULTS=${RESULTS:-$WORK/results.jsonl}
: >"$RESULTS"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
TEMP_DIRS+=("$WORK/paddock-state")

# measure LABEL ENDPOINT KEY SECRET ARGS...: one paddock_load run; appends its JSON line, tagged.
measure() {
  local label=$1 endpoint=$2 key=$3 secret=$4; shift 4
  log "$label: paddock_load --endpoint $endpoint --connections $CONNECTIONS $*"
  local line
  line=$("$LOAD" --endpoint "$endpoint" --access-key "$key" --secret-key "$secret" --region us-east-1 \
           --connections "$CONNECTIONS" --json "$@")
  line="{\"label\":\"$label\",${line#\{}"
  echo "$line" >>"$RESULTS"
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("    %9.0f req/s  p50 %.2f ms  p99 %.2f ms  max %.1f ms  errors %d %s" % (r["rps"], r["p50_ms"], r["p99_ms"], r["max_ms"], r["errors"], r["errorsByType"] or ""))' "$line" >&2
}

# prefill ENDPOINT KEY SECRET FAMILY N: registers N more revisions, with progress and timing.
prefill() {
  local endpoint=$1 key=$2 secret=$3 family=$4 n=$5
  ((n > 0)) || return 0
  log "prefill: registering $n revisions of $family on $CONNECTIONS connections"
  local t0=$SECONDS
  "$LOAD" --endpoint "$endpoint" --access-key "$key" --secret-key "$secret" --connections "$CONNECTIONS" \
    --action register-task-definition --family "$family" --prefill "$n" --requests 1 >/dev/null
  log "prefill: done in $((SECONDS - t0)) s"
}

if [[ -z ${SKIP_BUILD:-} ]]; then
  log "building paddock and paddock_load (release)"
  [[ -f $BUILD/build.ninja ]] || cmake --preset release -S "$ROOT" >/dev/null
  ninja -C "$BUILD" -j2 paddock paddock_load >&2
fi

log "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# --- Paddock ---------------------------------------------------------------------------------
STATE=$WORK/paddock-state
start_paddock "$STATE"
ENDPOINT=$PADDOCK_URL
make_access_key "$STATE" bench

measure paddock-describe "$ENDPOINT" "$KEY" "$SECRET" \
  --action describe-task-definition --family bench-describe --warmup "$WARMUP" --duration "$DURATION"
measure paddock-register "$ENDPOINT" "$KEY" "$SECRET" \
  --action register-task-definition --family bench-register --warmup "$WARMUP" --duration "$DURATION"

if ((BIG_FAMILY > 0)); then
  prefill "$ENDPOINT" "$KEY" "$SECRET" bench-big "$SMALL_FAMILY"
  measure "paddock-big-describe@$SMALL_FAMILY" "$ENDPOINT" "$KEY" "$SECRET" \
    --action describe-task-definition --family bench-big --warmup "$WARMUP" --duration "$DURATION"
  measure "paddock-big-register@$SMALL_FAMILY" "$ENDPOINT" "$KEY" "$SECRET" \
    --action register-task-definition --family bench-big --requests "$REG_SAMPLE"
  prefill "$ENDPOINT" "$KEY" "$SECRET" bench-big $((BIG_FAMILY - SMALL_FAMILY - REG_SAMPLE - 1))
  measure "paddock-big-describe@$BIG_FAMILY" "$ENDPOINT" "$KEY" "$SECRET" \
    --action describe-task-definition --family bench-big --warmup "$WARMUP" --duration "$DURATION"
  measure "paddock-big-register@$BIG_FAMILY" "$ENDPOINT" "$KEY" "$SECRET" \
    --action register-task-definition --family bench-big --requests "$REG_SAMPLE"
  log "store size: $(du -sh "$STATE" | cut -f1)"
fi

kill -TERM "$PADDOCK_PID"; wait "$PADDOCK_PID" 2>/dev/null || true

# --- moto ------------------------------------------------------------------------------------
if [[ -z ${SKIP_MOTO:-} ]]; then
  python3 -m moto.server -H 127.0.0.1 -p 0 >"$WORK/moto.log" 2>&1 &
  PIDS+=($!)
  MOTO_PID=$!
  line=$(wait_for_line "$WORK/moto.log" 'Running on http://127\.0\.0\.1:[0-9]+' 60)
  MOTO=${line#Running on }
  log "moto (pid $MOTO_PID) at $MOTO, $(python3 -c 'import moto; print("moto", moto.__version__)')"
  measure moto-describe "$MOTO" test test \
    --action describe-task-definition --family bench-describe --warmup "$WARMUP" --duration "$DURATION"
  measure moto-register "$MOTO" test test \
    --action register-task-definition --family bench-register --warmup "$WARMUP" --duration "$DURATION"
  kill -TERM "$MOTO_PID"; wait "$MOTO_PID" 2>/dev/null || true
fi

# --- Summary ---------------------------------------------------------------------------------
python3 - "$RESULTS" "$CONNECTIONS" "$SMALL_FAMILY" "$BIG_FAMILY" <<'EOF'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[r["label"]] = r
conns, small, big = sys.argv[2], sys.argv[3], sys.argv[4]
targets = {"paddock-describe": 20000, "paddock-register": 3000}
print(f"\nPaddock benchmarks, {conns} connections, durable commits")
print(f"{'run':<32} {'req/s':>9} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}  note")
for label, r in rows.items():
    note = ""
    if label in targets:
        t = targets[label]
        note = f"target >= {t:,}: {'met' if r['rps'] >= t else 'NOT met'}"
    print(f"{label:<32} {r['rps']:>9.0f} {r['p50_ms']:>8.2f} {r['p90_ms']:>8.2f} {r['p99_ms']:>8.2f} "
          f"{r['max_ms']:>8.1f} {r['errors']:>7}  {note}")
def ratio(a, b, what):
    if a in rows and b in rows and rows[b]["rps"] > 0:
        print(f"{what}: {rows[a]['rps'] / rows[b]['rps']:.2f}x")
print()
ratio("paddock-describe", "moto-describe", "DescribeTaskDefinition, Paddock / moto req/s")
ratio("paddock-register", "moto-register", "RegisterTaskDefinition, Paddock / moto req/s")
for action in ("describe", "register"):
    a, b = f"paddock-big-{action}@{small}", f"paddock-big-{action}@{big}"
    if a in rows and b in rows and rows[a]["rps"] > 0:
        ra, rb = rows[a], rows[b]
        kept = rb["rps"] / ra["rps"]
        print(f"{action} at {int(small):,} revisions: {ra['rps']:.0f} req/s, p50 {ra['p50_ms']:.2f} ms; "
              f"at {int(big):,}: {rb['rps']:.0f} req/s, p50 {rb['p50_ms']:.2f} ms; "
              f"big/small req/s {kept:.2f} (target within 2x, i.e. >= 0.50: {'met' if kept >= 0.5 else 'NOT met'})")
EOF
log "results: $RESULTS"
