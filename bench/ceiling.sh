#!/usr/bin/env bash
# The ceiling (issue 19): Paddock's API reads side by side with nginx serving the very same answer
# bytes, in one run, with the same driver (paddock_load) and connection count. The ratio
# Paddock req/s / nginx req/s says how close Paddock comes to what this machine's HTTP can do.
# docs/benchmarks.md ("The ceiling") explains the method and records a run.
#
#   bench/ceiling.sh
#   SKIP_BUILD=1 DURATION=3s ROUNDS=1 bench/ceiling.sh
#
# Paddock runs with SigV4 verification on (an account and key from `paddock admin`), and holds:
# the driver's own task definition (DescribeTaskDefinition), 10 RUNNING tasks of it on a container
# instance (DescribeTasks of all 10, ListTasks of their cluster) and 3 services of 2 tasks each
# (DescribeServices of all 3) — bench/ceiling_state.py sets that up and captures each answer.
# nginx (Debian's /usr/sbin/nginx) answers each operation's POST, routed by X-Amz-Target, with the
# captured bytes from memory, status 200 and Content-Type application/x-amz-json-1.1; curl checks
# the bytes are identical before anything is measured.
#
# Environment:
#   CONNECTIONS       keep-alive connections of each run                   default 16
#   DURATION          length of each timed run                             default 5s
#   ROUNDS            Paddock-then-nginx rounds per operation (the order
#                     alternates each round)                               default 3
#   WARMUP            untimed requests before each timed run               default 2000
#   IDLE_CONNECTIONS  idle keep-alive connections for the memory figure    default 1000
#   OPERATIONS        which to measure, space-separated                    default all four
#   SKIP_BUILD=1      use the binaries already in build/release
#   NGINX             the nginx binary                                     default /usr/sbin/nginx
#   RESULTS           where the JSON lines go                              default a temp file
#
# Every process this script starts is stopped by PID on exit; all traffic stays on 127.0.0.1 and
# every load is bounded by a duration or a request count.
set -euo pipefail

CONNECTIONS=${CONNECTIONS:-16}
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-2000}
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-1000}
OPERATIONS=${OPERATIONS:-DescribeTaskDefinition DescribeTasks ListTasks DescribeServices}
NGINX=${NGINX:-/usr/sbin/nginx}
FAMILY=ceiling

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build/release
PADDOCK=$BUILD/src/cli/paddock
LOAD=$BUILD/bench/paddock_load
STATE_PY=$ROOT/bench/ceiling_state.py
WORK=$(mktemp -d -t paddock-ceiling.XXXXXX)
RESULTS=${RESULTS:-$WORK/results.jsonl}
: >"$RESULTS"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
TEMP_DIRS+=("$WORK/paddock-state" "$WORK/nginx")

# driver_flags OPERATION: paddock_load's flags for OPERATION, sending the request body that
# ceiling_state.py captured the answer to (checked by check_request_body).
driver_flags() {
  case $1 in
    DescribeTaskDefinition) echo "--action describe-task-definition --family $FAMILY" ;;
    DescribeTasks) echo "--action describe-tasks --cluster $FAMILY --tasks $(cat "$BODIES/tasks")" ;;
    ListTasks) echo "--action list-tasks --cluster $FAMILY" ;;
    DescribeServices) echo "--action describe-services --cluster $FAMILY-svc --services $(cat "$BODIES/services")" ;;
    *) log "unknown operation $1"; return 1 ;;
  esac
}

# measure SERVER OPERATION ROUND ENDPOINT: one timed paddock_load run; appends its JSON line, tagged.
measure() {
  local server=$1 operation=$2 round=$3 endpoint=$4 line
  # shellcheck disable=SC2046  # driver_flags is a list of words
  line=$("$LOAD" --endpoint "$endpoint" --access-key "$KEY" --secret-key "$SECRET" --region us-east-1 \
           --connections "$CONNECTIONS" --warmup "$WARMUP" --duration "$DURATION" --json \
           $(driver_flags "$operation"))
  line="{\"server\":\"$server\",\"operation\":\"$operation\",\"round\":$round,${line#\{}"
  echo "$line" >>"$RESULTS"
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("  %-7s %-22s round %d: %9.0f req/s  p50 %.2f ms  p99 %.2f ms  errors %d %s" % (r["server"], r["operation"], r["round"], r["rps"], r["p50_ms"], r["p99_ms"], r["errors"], r["errorsByType"] or ""))' "$line" >&2
}

if [[ -z ${SKIP_BUILD:-} ]]; then
  log "building paddock and paddock_load (release)"
  [[ -f $BUILD/build.ninja ]] || cmake --preset release -S "$ROOT" >/dev/null
  ninja -C "$BUILD" -j2 paddock paddock_load >&2
fi
[[ -x $NGINX ]] || { log "no nginx at $NGINX (apt-get install nginx-light, or set NGINX)"; exit 1; }

log "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
log "$("$NGINX" -v 2>&1)"

# --- Paddock, with the state to read ------------------------------------------------------------
STATE=$WORK/paddock-state
# A service's deployment is COMPLETED after settle_seconds of steady state (40 s by default); the
# instances' agents never call, and nothing should change while the answers are compared.
cat >"$WORK/paddock.toml" <<'EOF'
agent_timeout_seconds = 3600
[scheduler]
settle_seconds = 1
EOF
start_paddock "$STATE" --config "$WORK/paddock.toml"
make_access_key "$STATE" ceiling

# paddock_load registers its own family when asked to describe it and it does not exist.
"$LOAD" --endpoint "$PADDOCK_URL" --access-key "$KEY" --secret-key "$SECRET" --connections 1 \
  --action describe-task-definition --family "$FAMILY" --requests 1 >/dev/null
BODIES=$WORK/bodies
log "setting up tasks and services, capturing the answers into $BODIES"
python3 "$STATE_PY" setup --endpoint "$PADDOCK_URL" --key "$KEY" --secret "$SECRET" --family "$FAMILY" --out "$BODIES"
for op in $OPERATIONS; do log "  $op: $(wc -c <"$BODIES/$op.response") bytes"; done

# --- nginx, answering the same bytes -------------------------------------------------------------
NGINX_DIR=$WORK/nginx
mkdir -p "$NGINX_DIR/temp"
NGINX_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
NGINX_URL=http://127.0.0.1:$NGINX_PORT
# Each operation's answer comes from memory (`return 200` of map values keyed by X-Amz-Target);
# worker_processes auto, access_log off, keep-alive for a billion requests.
python3 "$STATE_PY" nginx-conf --out "$BODIES" --nginx-dir "$NGINX_DIR" --port "$NGINX_PORT"
"$NGINX" -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" >"$NGINX_DIR/stdout.log" 2>&1 &
PIDS+=($!)
NGINX_PID=$!
for _ in $(seq 100); do
  curl -s -o /dev/null "$NGINX_URL/" && break
  kill -0 "$NGINX_PID" 2>/dev/null || { cat "$NGINX_DIR/error.log" "$NGINX_DIR/stdout.log" >&2; exit 1; }
  sleep 0.1
done
log "nginx (pid $NGINX_PID, $(pgrep -c -P "$NGINX_PID") workers) at $NGINX_URL"

for op in $OPERATIONS; do
  got=$(curl -s -X POST -H "Content-Type: application/x-amz-json-1.1" \
          -H "X-Amz-Target: AmazonEC2ContainerServiceV20141113.$op" --data-binary "@$BODIES/$op.request" \
          -o "$WORK/nginx-$op.out" -w '%{http_code} %{content_type}' "$NGINX_URL/")
  if [[ $got != "200 application/x-amz-json-1.1" ]] || ! cmp -s "$WORK/nginx-$op.out" "$BODIES/$op.response"; then
    log "nginx's $op answer is not Paddock's: '$got', $(wc -c <"$WORK/nginx-$op.out") bytes"; exit 1
  fi
done
log "nginx answers every operation with Paddock's bytes"

# The driver must send exactly the request whose answer was captured.
for op in $OPERATIONS; do
  # shellcheck disable=SC2046
  "$LOAD" --print-body $(driver_flags "$op") >"$WORK/driver-$op.request"
  cmp -s "$WORK/driver-$op.request" "$BODIES/$op.request" ||
    { log "paddock_load's $op request is not the captured one: $(cat "$WORK/driver-$op.request")"; exit 1; }
done
log "paddock_load sends every operation's captured request"

# --- Side by side --------------------------------------------------------------------------------
log "$ROUNDS round(s) of $DURATION per server and operation, $CONNECTIONS connections, $WARMUP warmup requests"
for round in $(seq "$ROUNDS"); do
  for op in $OPERATIONS; do
    if ((round % 2 == 1)); then
      measure paddock "$op" "$round" "$PADDOCK_URL"
      measure nginx "$op" "$round" "$NGINX_URL"
    else
      measure nginx "$op" "$round" "$NGINX_URL"
      measure paddock "$op" "$round" "$PADDOCK_URL"
    fi
  done
done
python3 "$STATE_PY" check --endpoint "$PADDOCK_URL" --key "$KEY" --secret "$SECRET" --out "$BODIES"

# --- Memory per idle connection ------------------------------------------------------------------
log "memory: $IDLE_CONNECTIONS idle keep-alive connections to each server"
IDLE=$(python3 "$STATE_PY" idle --endpoint "$PADDOCK_URL" --key "$KEY" --secret "$SECRET" --family "$FAMILY" \
         --pid "$PADDOCK_PID" --count "$IDLE_CONNECTIONS")
NGINX_PIDS=$(pgrep -d, -P "$NGINX_PID" || true)
NGINX_IDLE=$(python3 "$STATE_PY" idle --endpoint "$NGINX_URL" --key "$KEY" --secret "$SECRET" --family "$FAMILY" \
               --pid "$NGINX_PID${NGINX_PIDS:+,$NGINX_PIDS}" --count "$IDLE_CONNECTIONS")

# --- Summary -------------------------------------------------------------------------------------
python3 - "$RESULTS" "$BODIES" "$IDLE" "$NGINX_IDLE" "$CONNECTIONS" "$DURATION" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
results, bodies, idle, nginx_idle, conns, duration, rounds = sys.argv[1:]
runs = {}
for line in open(results):
    r = json.loads(line)
    runs.setdefault(r["operation"], {}).setdefault(r["round"], {})[r["server"]] = r
print(f"\nThe ceiling: Paddock (SigV4 verified) and nginx answering the same bytes, paddock_load, "
      f"{conns} connections, {rounds} round(s) of {duration} each")
print(f"{'operation':<23} {'bytes':>6} {'round':>5} {'paddock/s':>10} {'nginx/s':>10} {'ratio':>6} "
      f"{'p50 ms':>7} {'p99 ms':>7} {'nginx p99':>9}  errors")
errors = 0
for op, by_round in runs.items():
    size = os.path.getsize(os.path.join(bodies, f"{op}.response"))
    ratios = []
    for rnd in sorted(by_round):
        p, n = by_round[rnd].get("paddock"), by_round[rnd].get("nginx")
        if not p or not n:
            continue
        ratio = p["rps"] / n["rps"] if n["rps"] else 0
        ratios.append(ratio)
        errs = p["errors"] + n["errors"]
        errors += errs
        print(f"{op:<23} {size:>6} {rnd:>5} {p['rps']:>10.0f} {n['rps']:>10.0f} {ratio:>6.2f} "
              f"{p['p50_ms']:>7.2f} {p['p99_ms']:>7.2f} {n['p99_ms']:>9.2f}  {errs or ''}")
    if len(ratios) > 1:
        med = lambda server, key: statistics.median(by_round[r][server][key] for r in by_round)
        print(f"{op:<23} {size:>6} {'med':>5} {med('paddock', 'rps'):>10.0f} {med('nginx', 'rps'):>10.0f} "
              f"{statistics.median(ratios):>6.2f} {med('paddock', 'p50_ms'):>7.2f} {med('paddock', 'p99_ms'):>7.2f} "
              f"{med('nginx', 'p99_ms'):>9.2f}")
print("ratio = Paddock req/s / nginx req/s in the same round" +
      ("; 'med' = the median over rounds (of each column separately)." if int(rounds) > 1 else "."))
for server, line in (("Paddock", idle), ("nginx (master + workers)", nginx_idle)):
    i = json.loads(line)
    print(f"{server} with {i['connections']} idle keep-alive connections: VmRSS {i['rss_before_kib'] / 1024:.1f} MiB -> "
          f"{i['rss_after_kib'] / 1024:.1f} MiB, {i['kib_per_connection']:.1f} KiB per connection")
if errors:
    print(f"WARNING: {errors} requests failed; see the JSON lines")
EOF
log "results: $RESULTS"
