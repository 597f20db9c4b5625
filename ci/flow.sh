# Sourced by the scripts that start sample-flow: start_flow LOG INSTANCES ARGS... starts
# "$bin/sample-flow ARGS..." with its stderr in LOG, sets $flow to its pid, and returns once
# each of its INSTANCES threads consumes (or fails with the flow's own message).
start_flow() {
  local log=$1 instances=$2
  shift 2
  "$bin/sample-flow" "$@" 2>"$log" &
  flow=$!
  local _
  for _ in $(seq 200); do
    [ "$(grep -c "processing requests" "$log")" -ge "$instances" ] && return 0
    kill -0 "$flow" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  echo "sample-flow did not start consuming within 20 s:" >&2
  cat "$log" >&2
  return 1
}
