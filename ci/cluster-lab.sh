#!/usr/bin/env bash
# A broker cluster on this machine, for failover runs and the cost of replication (issue 63):
# three nats-server nodes with JetStream, or three RabbitMQ nodes clustered, on 127.0.0.1
# ports of their own, each with its own data directory. The shared NATS on 4222 and
# RabbitMQ on 5672 are never touched.
#
#   bash ci/cluster-lab.sh up [nats|rabbitmq]     # start the nodes that are not running
#                                                 #   (idempotent); prints the --qmgr URL
#   bash ci/cluster-lab.sh down [nats|rabbitmq]   # stop every node, remove the lab's data
#   bash ci/cluster-lab.sh status [nats|rabbitmq] # exit 0 when every node answers
#   bash ci/cluster-lab.sh url [nats|rabbitmq]    # the --qmgr URL naming every node
#   bash ci/cluster-lab.sh kill KIND N            # SIGKILL node N (1-3): lost at once
#   bash ci/cluster-lab.sh stop KIND N            # SIGTERM node N: a clean shutdown
#   bash ci/cluster-lab.sh start KIND N           # start node N again (it rejoins)
#   bash ci/cluster-lab.sh pid KIND N             # node N's process id
#
# OEMPUTX_CLUSTER_PORTS (default "14222 14223 14224" for NATS, "25682 25683 25684" for
# RabbitMQ) are the client ports, one per node; a NATS node's route port is its client
# port + 2000, a RabbitMQ node's Erlang distribution port its client port + 10000.
# OEMPUTX_CLUSTER_DIR (default /var/tmp/oemputx-cluster-lab-<first port>) holds each node's
# data, log and pid file. RabbitMQ nodes are named oemputx<port>@localhost, with a cookie of
# the lab's own, no plugins, and the user guest allowed from loopback. A test that kills
# nodes starts a lab of its own on free ports, so that no other test's lab loses a node.
set -euo pipefail

cmd=${1:-}
kind=${2:-nats}
case "$kind" in
  nats) default_ports="14222 14223 14224" ;;
  rabbitmq) default_ports="25682 25683 25684" ;;
  *) echo "cluster-lab: unknown cluster '$kind': nats or rabbitmq" >&2; exit 2 ;;
esac
read -r -a ports <<<"${OEMPUTX_CLUSTER_PORTS:-$default_ports}"
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

# Node $1's pid file: this script writes NATS's, RabbitMQ writes its own.
pid_file() { if [ "$kind" = nats ]; then echo "$dir/nats-$1.pid"; else echo "$dir/rabbit-$1/pid"; fi; }
node_pid() { cat "$(pid_file "$1")" 2>/dev/null || true; }
node_alive() {
  local pid
  pid=$(node_pid "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Whether node $1 is to be started: not when it runs; never on a port another process holds;
# program $2 installed from the Debian package of that name when absent.
needs_start() {
  local n=$1 port=${ports[$(($1 - 1))]}
  if node_alive "$n"; then return 1; fi
  if listening "$port"; then
    log "127.0.0.1:$port already answers and is not this lab's node $n: choose other OEMPUTX_CLUSTER_PORTS"
    exit 1
  fi
  command -v "$2" >/dev/null || {
    log "installing $2"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null
  }
}

nats_start() {
  local n=$1 port=${ports[$(($1 - 1))]}
  needs_start "$n" nats-server || return 0
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
      node_alive "$n" || { log "node $n (port $p) exited: $(tail -3 "$dir/nats-$n.log" 2>/dev/null)"; exit 1; }
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

rabbit_node() { echo "oemputx${ports[$(($1 - 1))]}@localhost"; }
# Run a command with node $1's environment.
rabbit_run() {
  local n=$1 port=${ports[$(($1 - 1))]}
  shift
  env HOME="$dir/rabbit-$n" RABBITMQ_NODENAME="$(rabbit_node "$n")" \
    RABBITMQ_DIST_PORT=$((port + 10000)) RABBITMQ_CONFIG_FILE="$dir/rabbit-$n/rabbitmq.conf" \
    RABBITMQ_MNESIA_BASE="$dir/rabbit-$n/mnesia" RABBITMQ_LOG_BASE="$dir/rabbit-$n/log" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/plugins" RABBITMQ_PID_FILE="$dir/rabbit-$n/pid" \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-setcookie $(cat "$dir/cookie")" "$@"
}

rabbit_start() {
  local n=$1 port=${ports[$(($1 - 1))]} m
  needs_start "$n" rabbitmq-server || return 0
  mkdir -p "$dir/rabbit-$n"
  [ -f "$dir/plugins" ] || echo '[].' >"$dir/plugins"
  [ -f "$dir/cookie" ] || echo "OEMPUTXLAB$(date +%s%N)" >"$dir/cookie"
  {
    echo "listeners.tcp.default = 127.0.0.1:$port"
    echo "loopback_users = none"
    echo "cluster_formation.peer_discovery_backend = classic_config"
    for m in $(seq 1 "${#ports[@]}"); do
      echo "cluster_formation.classic_config.nodes.$m = $(rabbit_node "$m")"
    done
  } >"$dir/rabbit-$n/rabbitmq.conf"
  # The server runs as the rabbitmq user: the lab's folders must be its to write.
  chmod -R a+rwX "$dir"
  rm -f "$dir/rabbit-$n/pid"
  rabbit_run "$n" nohup rabbitmq-server >"$dir/rabbit-$n.out" 2>&1 </dev/null &
}

rabbit_wait() {
  local n p until=$((SECONDS + 90))
  for n in $(seq 1 "${#ports[@]}"); do
    p=${ports[$((n - 1))]}
    until listening "$p"; do
      [ "$SECONDS" -lt "$until" ] || { log "node $n did not listen on $p within 90 s: $(tail -5 "$dir/rabbit-$n.out" 2>/dev/null)"; exit 1; }
      sleep 0.5
    done
  done
}

rabbit_url() {
  local i url="amqp://guest:guest@127.0.0.1:${ports[0]}/%2f"
  for i in "${ports[@]:1}"; do url+=",127.0.0.1:$i"; done
  echo "$url"
}

start_node() { if [ "$kind" = nats ]; then nats_start "$1"; else rabbit_start "$1"; fi; }
lab_url() { if [ "$kind" = nats ]; then nats_url; else rabbit_url; fi; }

case "$cmd" in
  up)
    mkdir -p "$dir"
    for n in $(seq 1 "${#ports[@]}"); do start_node "$n"; done
    if [ "$kind" = nats ]; then nats_wait; else rabbit_wait; fi
    log "$kind cluster up: ${#ports[*]} nodes, data in $dir"
    lab_url
    ;;
  down)
    for n in $(seq 1 "${#ports[@]}"); do
      pid=$(node_pid "$n")
      [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    done
    for n in $(seq 1 "${#ports[@]}"); do
      pid=$(node_pid "$n")
      [ -z "$pid" ] && continue
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
    ;;
  status)
    for n in $(seq 1 "${#ports[@]}"); do
      node_alive "$n" && listening "${ports[$((n - 1))]}" || exit 1
    done
    ;;
  url) lab_url ;;
  kill | stop)
    n=$(node_arg "${3:-}")
    pid=$(node_pid "$n")
    [ -n "$pid" ] || { log "node $n is not running"; exit 1; }
    if [ "$cmd" = kill ]; then kill -9 "$pid"; else kill -TERM "$pid"; fi
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ;;
  start)
    n=$(node_arg "${3:-}")
    start_node "$n"
    until_=$((SECONDS + 90))
    until listening "${ports[$((n - 1))]}"; do
      [ "$SECONDS" -lt "$until_" ] || { log "node $n did not listen within 90 s"; exit 1; }
      sleep 0.2
    done
    ;;
  pid) node_pid "$(node_arg "${3:-}")" ;;
  *)
    sed -n '2,28p' "$0" >&2
    exit 2
    ;;
esac
