#!/usr/bin/env bash
# Starts N `nucleus serve` replicas on loopback, each pinned to its share
# of the cores (taskset + -t), and sglang-router in front of them; prints
# the router's URL; Ctrl-C or SIGTERM stops the router and then drains
# and stops every replica.
#
#   scripts/cluster.sh N [--port P] [--policy cache_aware|round_robin|
#                        power_of_two|random] [--host ADDR]
#                        [-- nucleus serve args...]
#
# The router listens on ADDR:P (127.0.0.1:8080); replica i listens on
# 127.0.0.1:P+i (i = 1..N) and the router's own Prometheus metrics on
# 127.0.0.1:P+N+1. Environment: NUCLEUS_BIN (build/release/nucleus),
# NUCLEUS_ROUTER (python3 -m sglang_router.launch_router), CLUSTER_LOGS
# (a directory for the logs; default a new temporary one).
# Several hosts and Kubernetes: docs/DEPLOY.md.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage 0 ;; esac
N="$1"; shift
[[ "$N" =~ ^[1-9][0-9]?$ ]] || { echo "cluster.sh: N must be 1..99, got '$N'" >&2; exit 2; }
PORT=8080 POLICY=cache_aware HOST=127.0.0.1
while [ $# -gt 0 ]; do
  case "$1" in
    --port) PORT="${2:?--port needs a value}"; shift 2 ;;
    --policy) POLICY="${2:?--policy needs a value}"; shift 2 ;;
    --host) HOST="${2:?--host needs a value}"; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage 0 ;;
    *) echo "cluster.sh: unknown option '$1'" >&2; usage ;;
  esac
done
SERVE_ARGS=("$@")
case "$POLICY" in
  cache_aware|round_robin|power_of_two|random) ;;
  *) echo "cluster.sh: --policy must be cache_aware, round_robin, power_of_two or random" >&2; exit 2 ;;
esac
[[ "$PORT" =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1 ] && [ $((PORT + N + 1)) -le 65535 ] ||
  { echo "cluster.sh: --port $PORT leaves no room for $N replicas" >&2; exit 2; }
if [ "$POLICY" = power_of_two ] && [ "$N" -lt 2 ]; then
  echo "cluster.sh: power_of_two needs at least 2 replicas" >&2; exit 2
fi

BIN="${NUCLEUS_BIN:-$ROOT/build/release/nucleus}"
[ -x "$BIN" ] || { echo "cluster.sh: $BIN is not built (make)" >&2; exit 1; }
read -r -a ROUTER <<< "${NUCLEUS_ROUTER:-python3 -m sglang_router.launch_router}"
LOGS="${CLUSTER_LOGS:-$(mktemp -d -t nucleus-cluster.XXXXXX)}"
mkdir -p "$LOGS"

CORES=$(nproc)
PER=$(( CORES / N )); [ "$PER" -ge 1 ] || PER=1

PIDS=() ROUTER_PID=""
stop_all() {
  trap - INT TERM EXIT
  [ -n "$ROUTER_PID" ] && kill -TERM "$ROUTER_PID" 2>/dev/null || true
  [ -n "$ROUTER_PID" ] && wait "$ROUTER_PID" 2>/dev/null || true
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "cluster: stopped (logs in $LOGS)" >&2
}
trap 'stop_all; exit 0' INT TERM
trap stop_all EXIT

WORKERS=()
for i in $(seq 1 "$N"); do
  first=$(( ((i - 1) * PER) % CORES ))
  last=$(( first + PER - 1 ))
  p=$((PORT + i))
  taskset -c "$first-$last" "$BIN" serve --host 127.0.0.1 --port "$p" \
    -t "$PER" "${SERVE_ARGS[@]}" > "$LOGS/replica-$i.log" 2>&1 &
  PIDS+=("$!")
  WORKERS+=("http://127.0.0.1:$p")
  echo "cluster: replica $i on cores $first-$last: ${WORKERS[-1]} (log $LOGS/replica-$i.log)" >&2
done

# The router registers workers once they answer /health; wait for them so
# it never starts with an empty pool.
for i in $(seq 1 "$N"); do
  for _ in $(seq 1 600); do
    if ! kill -0 "${PIDS[$((i - 1))]}" 2>/dev/null; then
      echo "cluster: replica $i exited:" >&2; tail -5 "$LOGS/replica-$i.log" >&2; exit 1
    fi
    curl -sf -o /dev/null --max-time 1 "${WORKERS[$((i - 1))]}/health" && break
    sleep 0.2
  done
done

# Health checks every second (a replica that dies or drains leaves the pool
# within ~2 s, and rejoins after one good check); retries carry requests a
# dead replica never answered to another; the circuit breaker half-opens
# after 5 s so a restarted replica is tried again soon.
"${ROUTER[@]}" --host "$HOST" --port "$PORT" --policy "$POLICY" \
  --worker-urls "${WORKERS[@]}" \
  --prometheus-host 127.0.0.1 --prometheus-port $((PORT + N + 1)) \
  --health-check-interval-secs 1 --health-failure-threshold 2 \
  --health-success-threshold 1 --health-check-timeout-secs 2 \
  --cb-timeout-duration-secs 5 --retry-max-retries 5 \
  --worker-startup-timeout-secs 60 --worker-startup-check-interval 1 \
  --log-level warn > "$LOGS/router.log" 2>&1 &
ROUTER_PID=$!
for _ in $(seq 1 300); do
  kill -0 "$ROUTER_PID" 2>/dev/null || { echo "cluster: router exited:" >&2; tail -5 "$LOGS/router.log" >&2; exit 1; }
  curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/health" 2>/dev/null && break
  [ "$HOST" != 127.0.0.1 ] && [ "$HOST" != 0.0.0.0 ] &&
    curl -sf -o /dev/null --max-time 1 "http://$HOST:$PORT/health" 2>/dev/null && break
  sleep 0.2
done
echo "cluster: $N replicas behind sglang-router ($POLICY): http://$HOST:$PORT/v1 (router log $LOGS/router.log)"
wait "$ROUTER_PID" || true
