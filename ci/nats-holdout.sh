#!/usr/bin/env bash
# The NATS hold-out (nats-py responder): see ci/holdout.sh.
exec bash "$(dirname "$0")/holdout.sh" nats "$@"
