# shellcheck shell=bash
# What bench/*.sh share; `source` it once WORK (the run's temp dir) is set:
#
#   WORK=$(mktemp -d -t paddock-bench.XXXXXX)
#   source "$ROOT/bench/lib.sh"
#   server ... & PIDS+=($!)              # stopped by PID on exit
#   TEMP_DIRS+=("$WORK/paddock-state")   # removed on exit
#
# On exit every process in PIDS gets SIGTERM, and SIGKILL if it is still there 5 s later.
PIDS=()
TEMP_DIRS=()

stop_started() {
  for pid in "${PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "${TEMP_DIRS[@]}"
}
trap stop_started EXIT
trap 'exit 130' INT TERM

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# wait_for_line FILE REGEX SECONDS: prints the first matching line of FILE.
wait_for_line() {
  local file=$1 regex=$2 deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    if grep -Eo "$regex" "$file" 2>/dev/null | head -1 | grep .; then return 0; fi
    sleep 0.1
  done
  log "timed out waiting for /$regex/ in $file:"; cat "$file" >&2; return 1
}

# start_paddock STATE_DIR [SERVER FLAGS...]: `$PADDOCK server` on a free loopback port, its log in
# $WORK/paddock.log; sets PADDOCK_PID and PADDOCK_URL.
start_paddock() {
  local state=$1 line; shift
  mkdir -p "$state"
  "$PADDOCK" server "$@" --listen 127.0.0.1:0 --state-dir "$state" >"$WORK/paddock.log" 2>&1 &
  PIDS+=($!)
  PADDOCK_PID=$!
  line=$(wait_for_line "$WORK/paddock.log" 'paddock server listening on http://127\.0\.0\.1:[0-9]+' 30)
  PADDOCK_URL=${line#paddock server listening on }
  log "paddock (pid $PADDOCK_PID) at $PADDOCK_URL, state in $state"
}

# make_access_key STATE_DIR NAME: a new account NAME and an access key of it, with `paddock admin`;
# sets ACCOUNT, KEY and SECRET.
# shellcheck disable=SC2034  # the sourcing script reads them
make_access_key() {
  local state=$1 name=$2 keyjson
  ACCOUNT=$("$PADDOCK" admin --state-dir "$state" create-account --name "$name" |
              python3 -c 'import json,sys; print(json.load(sys.stdin)["account"])')
  keyjson=$("$PADDOCK" admin --state-dir "$state" create-access-key --account "$ACCOUNT")
  KEY=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["accessKeyId"])' "$keyjson")
  SECRET=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["secretAccessKey"])' "$keyjson")
  log "account $ACCOUNT, access key $KEY"
}
