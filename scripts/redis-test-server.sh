#!/usr/bin/env bash
# A redis-server for the tests, on a loopback port of its own, its data in DIR,
# no persistence:
#   scripts/redis-test-server.sh start DIR   prints the port once PING answers
#   scripts/redis-test-server.sh stop DIR    kills the server started in DIR
# Used by scripts/test.sh and scripts/with-redis.sh (which stop it on exit,
# also when tests fail).
set -euo pipefail
cmd=${1:?usage: redis-test-server.sh start|stop DIR}
dir=${2:?usage: redis-test-server.sh start|stop DIR}

case "$cmd" in
  start)
    command -v redis-server >/dev/null || { echo "redis-test-server: redis-server not installed (scripts/setup-deps.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    # A random high port; another one when it is taken (redis-server exits).
    for attempt in $(seq 1 20); do
      port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
      redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
        --databases 32 --loglevel warning --logfile "$dir/redis.log" </dev/null >/dev/null 2>&1 &
      pid=$!
      for _ in $(seq 1 100); do
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
          echo "$pid" > "$dir/pid"
          echo "$port"
          exit 0
        fi
        sleep 0.05
      done
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    done
    echo "redis-test-server: could not start redis-server (see $dir/redis.log)" >&2
    exit 1
    ;;
  stop)
    if [ -f "$dir/pid" ]; then
      pid=$(cat "$dir/pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/pid"
    fi
    ;;
  *)
    echo "usage: redis-test-server.sh start|stop DIR" >&2
    exit 2
    ;;
esac
