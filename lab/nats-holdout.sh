#!/usr/bin/env bash
# The NATS hold-out (nats-py responder): see lab/holdout.sh.
exec bash "$(dirname "$0")/holdout.sh" nats "$@"
