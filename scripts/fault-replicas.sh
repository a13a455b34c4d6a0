#!/usr/bin/env bash
# Two serve replicas on one PostgreSQL and one broker, behind the load tool's balancer, for each
# bus (Redis Streams, NATS JetStream):
#   kill            one replica killed with SIGKILL mid-load, started again 5 s later; its sink
#                   leases end after 1 min and are taken over
#   broker-restart  redis-server / nats-server stopped with SIGTERM mid-load, started again 5 s
#                   later on the same port and store directory
# Each run must end with every delivery answered 2xx stored once and processed, every live
# session's messages stored in the order they were sent, every event at the webhook receiver
# and in the file sinks (once in effect). Exits non-zero on any loss, duplicate effect or order
# violation, with what was wrong.
#
# Runs under scripts/pg.sh (a throwaway PostgreSQL from Debian's packages) unless
# SCRIBEHOOK_TEST_PG_DSN is set already; needs redis-server and nats-server (make deps).
# Bounded: FAULT_REPLICAS_N callbacks per run (default 3000), about 3–4 minutes in all, most of
# it the 1-minute sink lease of each kill. FAULT_REPLICAS_BUSES and FAULT_REPLICAS_SCENARIOS
# narrow the matrix; other arguments pass to every `load replicas` run (-seed N, -keep, …).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${SCRIBEHOOK_TEST_PG_DSN:-}" ]; then
  exec scripts/pg.sh run -- "$0" "$@"
fi

. scripts/lib.sh
work_dir
build_tools

n=${FAULT_REPLICAS_N:-3000}
failed=()
start=$(date +%s)
for bus in ${FAULT_REPLICAS_BUSES:-redisstream nats}; do
  for scenario in ${FAULT_REPLICAS_SCENARIOS:-kill broker-restart}; do
    echo "=== replicas -scenario $scenario -bus $bus (-n $n)"
    if ! "$tmp/load" replicas -bin "$tmp/scribehook" -dir "$tmp/$bus-$scenario" \
      -scenario "$scenario" -bus "$bus" -n "$n" "$@"; then
      failed+=("$scenario on $bus")
    fi
  done
done
echo "fault-replicas: $(($(date +%s) - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fault-replicas: FAILED: %s\n' "${failed[@]}" >&2
  echo "fault-replicas: see the reasons above; rerun one with -keep to inspect its directory and schema" >&2
  exit 1
fi
echo "fault-replicas: PASS (kill and broker-restart on redisstream and nats)"
