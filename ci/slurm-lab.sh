#!/usr/bin/env bash
# A two-node Slurm cluster on this machine, for tests/it/slurm.rs (issue 46): nodes s1 and s2
# are network namespaces on a bridge, each with its own hostname (a UTS namespace) and
# address, each running its own slurmd; slurmctld and munged run on the bridge's side,
# which is also where RabbitMQ is reachable, at the bridge's address, for a lab user.
#
#   bash ci/slurm-lab.sh up      # install what is absent, bring the lab up (idempotent)
#   bash ci/slurm-lab.sh down    # remove what `up` added (the unreachable route stays)
#   bash ci/slurm-lab.sh status  # exit 0 when the lab answers
#
# Traffic never leaves the machine: before anything else the lab's subnet gets an
# unreachable route (metric 4000, kept after `down`), so that while the bridge is down a
# call to a lab address fails here instead of following the default route out; and nothing
# calls a lab address unless the bridge is there. Running services are left alone: RabbitMQ
# gets a listener on the bridge address and a lab user (both removed by `down`), Slurm runs
# from a configuration of its own (SLURM_CONF below, ports 16817/16818), munged is started
# only when none runs. Needs root (ip netns, nsenter). Every setting can be overridden:
# OEMPUTX_LAB_SUBNET (10.79.0), OEMPUTX_LAB_DIR (/var/tmp/oemputx-slurm-lab).
set -euo pipefail

net=${OEMPUTX_LAB_SUBNET:-10.79.0}
dir=${OEMPUTX_LAB_DIR:-/var/tmp/oemputx-slurm-lab}
bridge=oemx-sbr
ctl_addr=$net.1
nodes=(s1 s2)
lab_user=oemputx-lab
lab_pass=oemputx-lab-pass
conf=$dir/slurm.conf

log() { printf 'slurm-lab: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
[ "$(id -u)" = 0 ] || { log "needs root (ip netns, nsenter, slurmd): run it with sudo"; exit 2; }
export PATH="$PATH:/usr/sbin:/sbin"

# First, always: the lab's subnet goes nowhere while its bridge is down.
guard() {
  # (Output captured, not piped to grep -q: under pipefail an early grep exit fails the pipe.)
  [[ "$(ip route show table main)" == *"unreachable $net.0/24 metric 4000"* ]] ||
    ip route add unreachable "$net.0/24" metric 4000
}

bridge_up() { [[ "$(ip -br link show "$bridge" 2>/dev/null)" == *" UP "* ]]; }

install_absent() {
  local need=()
  command -v slurmctld >/dev/null || need+=(slurmctld)
  command -v slurmd >/dev/null || need+=(slurmd)
  command -v srun >/dev/null || need+=(slurm-client)
  command -v munged >/dev/null || need+=(munge)
  command -v nsenter >/dev/null || need+=(util-linux)
  [ ${#need[@]} = 0 ] && return 0
  log "installing ${need[*]} (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
  [ -s /etc/munge/munge.key ] || { log "making a munge key"; mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge && chown munge:munge /run/munge
  log "starting munged (user munge)"
  runuser -u munge -- munged
  echo "$(cat /run/munge/munged.pid 2>/dev/null || true)" >"$dir/munged.started"
  for _ in $(seq 20); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "munged did not answer (see /var/log/munge/munged.log)"
}

network() {
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
  fi
  [[ "$(ip addr show dev "$bridge")" == *"inet $ctl_addr/24"* ]] || ip addr add "$ctl_addr/24" dev "$bridge"
  ip link set "$bridge" up
  local i=0 n
  for n in "${nodes[@]}"; do
    i=$((i + 1))
    [ -e "/run/netns/oemx-$n" ] || ip netns add "oemx-$n"
    if ! ip link show "oemx-v$n" >/dev/null 2>&1; then
      ip link add "oemx-v$n" type veth peer name eth0 netns "oemx-$n"
    fi
    ip link set "oemx-v$n" master "$bridge" up
    [[ "$(ip -n "oemx-$n" addr show dev eth0)" == *"inet $net.1$i/24"* ]] || ip -n "oemx-$n" addr add "$net.1$i/24" dev eth0
    ip -n "oemx-$n" link set eth0 up
    ip -n "oemx-$n" link set lo up
  done
}

write_conf() {
  mkdir -p "$dir/state" "$dir/log"
  cat >"$conf.new" <<EOF
# Written by ci/slurm-lab.sh: the lab's own cluster, beside any Slurm of the machine's.
ClusterName=oemx
SlurmctldHost=oemx-ctl($ctl_addr)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
# No cgroups: the nodes share one kernel's hierarchy, and processes are enough to track.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# The nodes declare the CPUs written here, not the two the machine has: 4 tasks per node.
SlurmdParameters=config_overrides
ReturnToService=2
# A node whose slurmd is gone is noticed in seconds, not the default five minutes.
SlurmdTimeout=15
MessageTimeout=10
KillWait=5
InactiveLimit=0
# A job waiting on one that failed (afterok) is cancelled at once, not left pending.
DependencyParameters=kill_invalid_depend
MinJobAge=300
NodeName=s1 NodeAddr=$net.11 CPUs=4 State=UNKNOWN
NodeName=s2 NodeAddr=$net.12 CPUs=4 State=UNKNOWN
PartitionName=lab Nodes=s1,s2 Default=YES MaxTime=60 State=UP
EOF
  mv "$conf.new" "$conf"
  # Node names resolve to their addresses for every client (srun looks them up).
  hosts_entries
}

hosts_entries() {
  local want tmp
  want=$(printf '%s oemx-ctl # oemputx-slurm-lab\n%s s1 # oemputx-slurm-lab\n%s s2 # oemputx-slurm-lab\n' "$ctl_addr" "$net.11" "$net.12")
  if [ "$(grep '# oemputx-slurm-lab$' /etc/hosts || true)" != "$want" ]; then
    tmp=$(grep -v '# oemputx-slurm-lab$' /etc/hosts || true)
    printf '%s\n%s\n' "$tmp" "$want" >/etc/hosts
  fi
}

# Whether pid file $1 names a running $2. The program's name is checked too: the files are
# under /var/tmp, which outlives a reboot, and a stale PID taken by another process (a
# broker, a shell) would otherwise count as the lab's daemon: not started by `up`, killed by `down`.
alive() {
  local pid
  [ -s "$1" ] && pid=$(cat "$1") && [[ "$pid" =~ ^[0-9]+$ ]] &&
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}

start_slurm() {
  export SLURM_CONF=$conf
  if ! alive "$dir/slurmctld.pid" slurmctld; then
    log "starting slurmctld (oemx-ctl, $ctl_addr:16817)"
    unshare --uts sh -c "hostname oemx-ctl; exec slurmctld -c -f '$conf'"
  fi
  for n in "${nodes[@]}"; do
    if ! alive "$dir/slurmd-$n.pid" slurmd; then
      log "starting slurmd on $n"
      mkdir -p "$dir/spool-$n"
      nsenter --net="/run/netns/oemx-$n" unshare --uts sh -c "hostname $n; exec slurmd -f '$conf' -N $n"
    fi
  done
  local i
  for ((i = 0; i < 60; i++)); do
    if [ "$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$')" = 2 ]; then
      log "both nodes idle"; return 0
    fi
    sleep 0.5
  done
  sinfo -N >&2 || true
  die "the nodes did not come up within 30 s (logs in $dir/log)"
}

rabbit() {
  command -v rabbitmqctl >/dev/null || die "no rabbitmqctl: RabbitMQ must run here (bash ci/services.sh)"
  bridge_up || die "the bridge $bridge is down: not calling $ctl_addr"
  if ! (exec 3<>"/dev/tcp/$ctl_addr/5672") 2>/dev/null; then
    log "RabbitMQ: a listener on $ctl_addr:5672"
    rabbitmqctl -q eval "rabbit_networking:start_tcp_listener({\"$ctl_addr\",5672},10)." >/dev/null
  fi
  if [[ "$(rabbitmqctl -q list_users 2>/dev/null)" != *"$lab_user"* ]]; then
    log "RabbitMQ: the lab user $lab_user"
    rabbitmqctl -q add_user "$lab_user" "$lab_pass" >/dev/null
    rabbitmqctl -q set_permissions -p / "$lab_user" '.*' '.*' '.*' >/dev/null
    rabbitmqctl -q set_user_tags "$lab_user" monitoring >/dev/null
  fi
}

up() {
  local t0=$SECONDS
  guard
  install_absent
  mkdir -p "$dir"
  network
  write_conf
  start_munge
  start_slurm
  rabbit
  printf 'SLURM_CONF=%s\nOEMPUTX_LAB_AMQP=amqp://%s:%s@%s:5672/%%2f\n' "$conf" "$lab_user" "$lab_pass" "$ctl_addr" >"$dir/env"
  log "up in $((SECONDS - t0)) s: SLURM_CONF=$conf, RabbitMQ at $ctl_addr:5672 (user $lab_user); $dir/env"
}

down() {
  guard
  local f
  for f in "$dir"/slurmd-*.pid; do
    alive "$f" slurmd && kill "$(cat "$f")" 2>/dev/null || true
  done
  alive "$dir/slurmctld.pid" slurmctld && kill "$(cat "$dir/slurmctld.pid")" 2>/dev/null || true
  if alive "$dir/munged.started" munged; then
    kill "$(cat "$dir/munged.started")" || true
  fi
  rm -f "$dir/munged.started"
  if command -v rabbitmqctl >/dev/null; then
    rabbitmqctl -q eval "rabbit_networking:stop_tcp_listener({\"$ctl_addr\",5672})." >/dev/null 2>&1 || true
    rabbitmqctl -q delete_user "$lab_user" >/dev/null 2>&1 || true
  fi
  for n in "${nodes[@]}"; do
    ip netns del "oemx-$n" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  if grep -q '# oemputx-slurm-lab$' /etc/hosts; then
    local tmp; tmp=$(grep -v '# oemputx-slurm-lab$' /etc/hosts || true)
    printf '%s\n' "$tmp" >/etc/hosts
  fi
  log "down (the unreachable route for $net.0/24 stays)"
}

status() {
  guard
  bridge_up || { log "the bridge $bridge is down"; return 1; }
  [ "$(SLURM_CONF=$conf sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$')" = 2 ]
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) log "usage: bash ci/slurm-lab.sh up|down|status"; exit 2 ;;
esac
