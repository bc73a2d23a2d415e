#!/usr/bin/env bash
# Runs a command with a redis-server of its own for the fleet tests
# (SHAPESHIFT_TEST_REDIS=127.0.0.1:PORT), stopping it afterwards whatever the
# command's outcome, e.g.
#   scripts/with-redis.sh ctest --test-dir build -R Redis
#   scripts/with-redis.sh build/tests/fleet/fleet_test
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
redis_dir=$(mktemp -d -t shapeshift-redis.XXXXXX)
trap '"$here/redis-test-server.sh" stop "$redis_dir"; rm -rf "$redis_dir"' EXIT
port=$("$here/redis-test-server.sh" start "$redis_dir")
export SHAPESHIFT_TEST_REDIS=127.0.0.1:$port
echo "with-redis: redis-server on 127.0.0.1:$port (data in $redis_dir) for the fleet tests"
"$@"
