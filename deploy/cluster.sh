#!/usr/bin/env bash
# Start N identical Lumina instances on this machine (ports BASE_PORT+1 … BASE_PORT+N) over
# one Redis and one SQL server. Put any HTTP load balancer in front (deploy/nginx.conf).
#
#   deploy/cluster.sh start [N]    build once, migrate once, start N instances
#   deploy/cluster.sh stop         stop them
#   deploy/cluster.sh status       which ones answer /ping
#
# Settings (environment): LUMINA_DATABASE_URL (MariaDB/MySQL or PostgreSQL — not SQLite),
# LUMINA_REDIS_URL (hot windows, run locks, run event streams), REFLEX_REDIS_URL (Reflex's
# UI state, so any instance can serve any browser), REFLEX_API_URL (the balancer's URL as
# browsers see it, default http://127.0.0.1:8080), BASE_PORT (default 3000), and
# LUMINA_API_KEYS (required: behind a balancer every client arrives from loopback, so the
# instances trust no address — LUMINA_TRUST_LOOPBACK=false — and everyone needs a key).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${LUMINA_DATABASE_URL:=postgresql+psycopg://postgres@127.0.0.1:5432/lumina}"
: "${LUMINA_REDIS_URL:=redis://127.0.0.1:6379/2}"
: "${REFLEX_REDIS_URL:=redis://127.0.0.1:6379/3}"
: "${BASE_PORT:=3000}"
# The address browsers use (the balancer): the UI's websocket connects there, not to the
# instance that served the page, so a browser can move to another instance.
: "${REFLEX_API_URL:=http://127.0.0.1:8080}"
# The balancer's host name is what browsers send as Host; the instances must accept it.
: "${LUMINA_ALLOWED_HOSTS:=$(printf '%s' "$REFLEX_API_URL" | sed -E 's#^[a-z]+://##; s#[:/].*$##')}"
LUMINA_TRUST_LOOPBACK=false
# Every client arrives with the balancer's address: it limits per client (limit_conn).
: "${LUMINA_MAX_REQUESTS_PER_ADDRESS:=0}"
export LUMINA_DATABASE_URL LUMINA_REDIS_URL REFLEX_REDIS_URL REFLEX_API_URL
export LUMINA_ALLOWED_HOSTS LUMINA_TRUST_LOOPBACK LUMINA_MAX_REQUESTS_PER_ADDRESS
export PATH="$PWD/.venv/bin:$PATH" REFLEX_USE_NPM=1 REFLEX_CHECK_LATEST_VERSION=0
export NPM_CONFIG_REGISTRY="${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org/}"
RUN=.cluster

create_database() {
    # The default URL names a local PostgreSQL database; create it if it is missing.
    case "$LUMINA_DATABASE_URL" in
    postgresql*127.0.0.1*/lumina | postgresql*localhost*/lumina)
        psql -h 127.0.0.1 -U postgres -tc "SELECT 1 FROM pg_database WHERE datname='lumina'" |
            grep -q 1 || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE lumina" >/dev/null
        ;;
    esac
}

start() {
    local count=${1:-2}
    if [ -z "${LUMINA_API_KEYS:-}" ]; then
        echo "a cluster needs LUMINA_API_KEYS: behind the balancer every client comes from" >&2
        echo "loopback, so no address is trusted (docs/SECURITY.md, docs/DEPLOY.md)" >&2
        exit 2
    fi
    case "$LUMINA_DATABASE_URL" in sqlite*)
        echo "a cluster needs a shared SQL server: set LUMINA_DATABASE_URL to MariaDB or PostgreSQL" >&2
        exit 2 ;;
    esac
    make --no-print-directory venv >/dev/null
    create_database
    .venv/bin/python -m lumina_app check
    .venv/bin/alembic upgrade head
    mkdir -p "$RUN"
    for i in $(seq 1 "$count"); do
        local port=$((BASE_PORT + i))
        REFLEX_WEB_WORKDIR="$RUN/web-$i" REFLEX_STATES_WORKDIR="$RUN/states-$i" \
            setsid .venv/bin/reflex run --env prod --frontend-port "$port" \
            >"$RUN/instance-$i.log" 2>&1 </dev/null &
        echo $! >"$RUN/instance-$i.pid"
        echo "instance $i: http://127.0.0.1:$port (log $RUN/instance-$i.log)"
    done
    for i in $(seq 1 "$count"); do
        local port=$((BASE_PORT + i))
        for _ in $(seq 1 240); do
            curl -fs "http://127.0.0.1:$port/ping" >/dev/null 2>&1 && break
            sleep 0.5
        done
    done
    status
}

stop() {
    for pidfile in "$RUN"/instance-*.pid; do
        [ -e "$pidfile" ] || continue
        kill -TERM -- "-$(cat "$pidfile")" 2>/dev/null || true
        rm -f "$pidfile"
    done
}

status() {
    for pidfile in "$RUN"/instance-*.pid; do
        [ -e "$pidfile" ] || continue
        local i=${pidfile##*-}
        i=${i%.pid}
        local port=$((BASE_PORT + i))
        if curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
            echo "instance $i on :$port ok  $(curl -s "http://127.0.0.1:$port/healthz")"
        else
            echo "instance $i on :$port not answering"
        fi
    done
}

case "${1:-}" in
start) start "${2:-2}" ;;
stop) stop ;;
status) status ;;
*) echo "usage: $0 start [N] | stop | status" >&2; exit 2 ;;
esac
