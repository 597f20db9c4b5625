#!/usr/bin/env bash
# A broker cluster on this machine, for failover runs and the cost of replication (issue 63):
# three nats-server nodes with JetStream on 127.0.0.1 ports of their own, routes between
# them, each with its own data directory. The shared NATS on 4222 is never touched.
#
#   bash ci/cluster-lab.sh up [nats]        # start the nodes that are not running (idempotent);
#                                           #   prints the --qmgr URL naming all three
#   bash ci/cluster-lab.sh down [nats]      # stop every node, remove the lab's data
#   bash ci/cluster-lab.sh status [nats]    # exit 0 when every node answers
#   bash ci/cluster-lab.sh url [nats]       # the --qmgr URL naming every node
#   bash ci/cluster-lab.sh kill nats N      # SIGKILL node N (1-3): lost at once, as in a crash
#   bash ci/cluster-lab.sh stop nats N      # SIGTERM node N: a clean shutdown
#   bash ci/cluster-lab.sh start nats N     # start node N again (it rejoins the cluster)
#   bash ci/cluster-lab.sh pid nats N       # node N's process id
#
# OEMPUTX_CLUSTER_PORTS (default "14222 14223 14224") are the client ports, one per node;
# each node's route port is its client port + 2000. OEMPUTX_CLUSTER_DIR (default
# /var/tmp/oemputx-cluster-lab-<first port>) holds each node's JetStream store, log and pid
# file. A test that kills nodes starts a lab of its own on free ports, so that no other
# test's lab loses a node. A three-node RabbitMQ cluster is not built yet: `up rabbitmq`
# says so and exits 2.
set -euo pipefail

read -r -a ports <<<"${OEMPUTX_CLUSTER_PORTS:-14222 14223 14224}"
[ "${#ports[@]}" -ge 2 ] || { echo "cluster-lab: OEMPUTX_CLUSTER_PORTS names ${#ports[@]} port(s); a cluster needs 2 or more" >&2; exit 2; }
dir=${OEMPUTX_CLUSTER_DIR:-/var/tmp/oemputx-cluster-lab-${ports[0]}}
export PATH="$PATH:/usr/sbin"

log() { printf 'cluster-lab: %s\n' "$*" >&2; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

nats_routes() {
  local p routes=()
  for p in "${ports[@]}"; do routes+=("nats://127.0.0.1:$((p + 2000))"); done
  local IFS=,
  echo "${routes[*]}"
}

nats_pid() { cat "$dir/nats-$1.pid" 2>/dev/null || true; }

nats_alive() {
  local pid
  pid=$(nats_pid "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

nats_start() {
  local n=$1 port=${ports[$(($1 - 1))]}
  if nats_alive "$n"; then return 0; fi
  if listening "$port"; then
    log "127.0.0.1:$port already answers and is not this lab's node $n: choose other OEMPUTX_CLUSTER_PORTS"
    exit 1
  fi
  command -v nats-server >/dev/null || {
    log "installing nats-server"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nats-server >/dev/null
  }
  mkdir -p "$dir/nats-$n"
  nohup nats-server -a 127.0.0.1 -p "$port" -n "lab-n$n" -js -sd "$dir/nats-$n" \
    --cluster_name oemputx-lab --cluster "nats://127.0.0.1:$((port + 2000))" \
    --routes "$(nats_routes)" >"$dir/nats-$n.log" 2>&1 </dev/null &
  echo $! >"$dir/nats-$n.pid"
}

nats_wait() {
  local n p until=$((SECONDS + 30))
  for n in $(seq 1 "${#ports[@]}"); do
    p=${ports[$((n - 1))]}
    until listening "$p"; do
      nats_alive "$n" || { log "node $n (port $p) exited: $(tail -3 "$dir/nats-$n.log" 2>/dev/null)"; exit 1; }
      [ "$SECONDS" -lt "$until" ] || { log "node $n did not listen on $p within 30 s"; exit 1; }
      sleep 0.1
    done
  done
  # JetStream's meta group needs a leader before a stream can be made.
  until grep -qh "JetStream cluster new metadata leader\|Self is new JetStream cluster metadata leader" "$dir"/nats-*.log 2>/dev/null; do
    [ "$SECONDS" -lt "$until" ] || { log "no JetStream metadata leader within 30 s; the nodes' logs are in $dir"; exit 1; }
    sleep 0.1
  done
}

nats_url() {
  local p urls=()
  for p in "${ports[@]}"; do urls+=("nats://127.0.0.1:$p"); done
  local IFS=,
  echo "${urls[*]}"
}

node_arg() {
  local n=${1:-}
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le "${#ports[@]}" ] ||
    { log "name a node from 1 to ${#ports[@]} (got '${n}')"; exit 2; }
  echo "$n"
}

cmd=${1:-}
kind=${2:-nats}
case "$kind" in
  nats) ;;
  rabbitmq)
    log "a RabbitMQ cluster is not built yet (issue 63): only 'nats' clusters come up here"
    exit 2
    ;;
  *) log "unknown cluster '$kind': nats"; exit 2 ;;
esac

case "$cmd" in
  up)
    mkdir -p "$dir"
    for n in $(seq 1 "${#ports[@]}"); do nats_start "$n"; done
    nats_wait
    log "NATS cluster up: ${#ports[*]} nodes, data in $dir"
    nats_url
    ;;
  down)
    for n in $(seq 1 "${#ports[@]}"); do
      pid=$(nats_pid "$n")
      [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    done
    for n in $(seq 1 "${#ports[@]}"); do
      pid=$(nats_pid "$n")
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
    ;;
  status)
    for n in $(seq 1 "${#ports[@]}"); do
      nats_alive "$n" && listening "${ports[$((n - 1))]}" || exit 1
    done
    ;;
  url) nats_url ;;
  kill | stop)
    n=$(node_arg "${3:-}")
    pid=$(nats_pid "$n")
    [ -n "$pid" ] || { log "node $n is not running"; exit 1; }
    if [ "$cmd" = kill ]; then kill -9 "$pid"; else kill -TERM "$pid"; fi
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ;;
  start)
    n=$(node_arg "${3:-}")
    nats_start "$n"
    until listening "${ports[$((n - 1))]}"; do nats_alive "$n" || { log "node $n exited"; exit 1; }; sleep 0.1; done
    ;;
  pid) nats_pid "$(node_arg "${3:-}")" ;;
  *)
    sed -n '2,22p' "$0" >&2
    exit 2
    ;;
esac
