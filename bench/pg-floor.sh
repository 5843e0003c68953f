#!/usr/bin/env bash
# The floor under the PostgreSQL journal: the four statements a keyed write
# makes (bench/pg-floor/write.sql), sent by pgbench from as many clients as
# the gateway benchmark's connections, with no gateway, tool or HTTP in the
# way — and the same four in one transaction (write-one-tx.sql), which is
# what a group commit in the journal could save at most. Prints writes/s and
# the machine's idle share while it ran.
#
#   RECOURSE_TEST_POSTGRES_URL=postgres://… bench/pg-floor.sh [--duration SECS] [--clients N]
set -euo pipefail
cd "$(dirname "$0")"

DURATION=10
CLIENTS=32
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "bench/pg-floor.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
URL="${RECOURSE_BENCH_POSTGRES_URL:-${RECOURSE_TEST_POSTGRES_URL:?set RECOURSE_TEST_POSTGRES_URL}}"
PGBENCH="$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -1)"
[ -x "$PGBENCH" ] || { echo "bench/pg-floor.sh: pgbench not found" >&2; exit 2; }
SCHEMA="recourse_floor_$$"
psql -q "$URL" -c "CREATE SCHEMA $SCHEMA" >/dev/null
trap 'psql -q "$URL" -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true' EXIT
PGOPTIONS="-c search_path=$SCHEMA" psql -q "$URL" -f pg-floor/schema.sql >/dev/null

idle() { awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
for script in write write-one-tx; do
  read -r i1 t1 < <(idle)
  tps=$(PGOPTIONS="-c search_path=$SCHEMA" "$PGBENCH" -n -M prepared -c "$CLIENTS" -j 2 \
    -T "$DURATION" -f "pg-floor/$script.sql" "$URL" 2>&1 | awk '/^tps/{printf "%d", $3}')
  read -r i2 t2 < <(idle)
  echo "$script: $tps writes/s, machine idle $(( 100 * (i2 - i1) / (t2 - t1) ))%"
done
