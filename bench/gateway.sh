#!/usr/bin/env bash
# The gateway benchmark: the same load, in one run, straight to a reference
# tool, through nginx (when installed), through a minimal axum->reqwest
# forwarder (the floor of the gateway's stack), the same forwarder over hyper's
# client (what the gateway sends plain HTTP with), that one reading the tool's
# envelope and answering the gateway's record with serde (the floor of the
# gateway's contract on that stack) and through `recourse serve`;
# then a keyed non-idempotent write (journaled) through nginx and the gateway
# (and, when RECOURSE_BENCH_POSTGRES_URL or RECOURSE_TEST_POSTGRES_URL names a
# PostgreSQL server and psql is installed, a second gateway journaling there),
# the gateway's memory per in-flight call, and the library's success path
# against raw reqwest in CPU time per call.
#
#   bench/gateway.sh [--duration SECS] [--rounds N] [--connections N]
#                    [--in-flight N] [--skip-build] [--only read|write|memory|library]...
#
# Throughput and latency come from wrk (-t1, --latency); CPU per call is the
# server process's utime+stime (/proc/PID/stat) over the measured run divided
# by the requests wrk completed. Each figure is the median over the rounds,
# which alternate the order of the targets; the ratios are given both from
# those medians and paired by round (the median of each round's own ratio,
# steadier on a machine whose speed drifts). Before anything is measured, each
# target must answer the request it will be sent with 2xx (the gateway with a
# `succeeded` record); a measured run with a non-2xx answer stops the script:
# a figure of refusals is not a figure. wrk and nginx are installed from the
# Debian packages when missing (as root, or with sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=10
ROUNDS=3
CONNECTIONS=32
IN_FLIGHT=1000
BUILD=1
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --connections) CONNECTIONS="$2"; shift 2 ;;
    --in-flight) IN_FLIGHT="$2"; shift 2 ;;
    --skip-build) BUILD=0; shift ;;
    --only) ONLY+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench/gateway.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
wanted() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local part
  for part in "${ONLY[@]}"; do [ "$part" = "$1" ] && return 0; done
  return 1
}

install_debian() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  if ! command -v apt-get >/dev/null; then
    echo "bench/gateway.sh: $* missing and no apt-get to install it" >&2
    return 1
  fi
  echo "installing $* (Debian packages)" >&2
  $sudo apt-get install -y "$@" >/dev/null || { $sudo apt-get update >/dev/null && $sudo apt-get install -y "$@" >/dev/null; }
}
command -v wrk >/dev/null || install_debian wrk
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$NGINX" ]; then
  install_debian nginx-light || install_debian nginx || true
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
fi
[ -x "$NGINX" ] || { echo "nginx unavailable: its rows are left out" >&2; NGINX=""; }

if [ "$BUILD" -eq 1 ]; then
  cargo build --release -p recourse-cli -p recourse-bench
fi
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release"
HZ=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/recourse-bench.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  local pid file
  # `start` runs in a command substitution, a subshell: what it starts is
  # known by the pid files it writes, not by PIDS.
  for file in "$WORK"/*.pid; do
    [ -f "$file" ] && PIDS+=("$(cat "$file")")
  done
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME LINE-PATTERN COMMAND...: runs COMMAND in the background and
# prints the first URL it writes on stdout.
start() {
  local name="$1" pattern="$2"
  shift 2
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  echo "$pid" >"$WORK/$name.pid"
  local i
  for i in $(seq 100); do
    if grep -qE "$pattern" "$WORK/$name.out" 2>/dev/null; then
      grep -oE 'http://[0-9.:]+' "$WORK/$name.out" | head -1
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench/gateway.sh: $name did not start:" >&2
  cat "$WORK/$name.err" >&2
  return 1
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

TOOLS=$(start tools 'http://' "$BIN/recourse" tools serve --port 0)
TOOLS_PID=$(cat "$WORK/tools.pid")
export XDG_STATE_HOME="$WORK/state"
GATEWAY=$(start gateway 'listening' "$BIN/recourse" serve --port 0)
GATEWAY_PID=$(cat "$WORK/gateway.pid")
# The same gateway journaling to PostgreSQL, in a schema of its own.
PG_URL="${RECOURSE_BENCH_POSTGRES_URL:-${RECOURSE_TEST_POSTGRES_URL:-}}"
GATEWAY_PG=""
if [ -n "$PG_URL" ] && command -v psql >/dev/null; then
  PG_SCHEMA="recourse_bench_$$"
  psql -q "$PG_URL" -c "CREATE SCHEMA $PG_SCHEMA" >/dev/null
  trap 'cleanup; psql -q "$PG_URL" -c "DROP SCHEMA IF EXISTS $PG_SCHEMA CASCADE" >/dev/null 2>&1 || true' EXIT
  PG_SEP='?'; case "$PG_URL" in *\?*) PG_SEP='&' ;; esac
  GATEWAY_PG=$(start gateway-pg 'listening' "$BIN/recourse" serve --port 0 \
    --journal "${PG_URL}${PG_SEP}options=-csearch_path%3D${PG_SCHEMA}")
  GATEWAY_PG_PID=$(cat "$WORK/gateway-pg.pid")
fi
FORWARDER=$(start forwarder 'listening' "$BIN/recourse-bench" forward --port 0)
FORWARDER_PID=$(cat "$WORK/forwarder.pid")
FORWARDER_HYPER=$(start forwarder-hyper 'listening' "$BIN/recourse-bench" forward --port 0 --client hyper)
FORWARDER_HYPER_PID=$(cat "$WORK/forwarder-hyper.pid")
FORWARDER_RECORD=$(start forwarder-record 'listening' "$BIN/recourse-bench" forward --port 0 --client hyper --answer record)
FORWARDER_RECORD_PID=$(cat "$WORK/forwarder-record.pid")
NGINX_URL=""
if [ -n "$NGINX" ]; then
  NGINX_PORT=$(free_port)
  mkdir -p "$WORK/nginx"
  cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  upstream tool {
    server ${TOOLS#http://};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      proxy_pass http://tool;
      proxy_http_version 1.1;
      # The tool's own host: by default nginx sends the upstream block's name
      # (Host: tool), which recourse tools serve refuses (403 HOST_NOT_ALLOWED).
      proxy_set_header Host ${TOOLS#http://};
      proxy_set_header Connection "";
      proxy_next_upstream error timeout http_502 http_503 http_504;
      proxy_next_upstream_tries 3;
    }
  }
}
EOF
  "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" \
    >"$WORK/nginx.out" 2>&1 &
  PIDS+=("$!")
  NGINX_MASTER=$!
  for _ in $(seq 50); do
    NGINX_PID=$(pgrep -P "$NGINX_MASTER" | head -1 || true)
    [ -n "$NGINX_PID" ] && break
    sleep 0.1
  done
  if [ -z "${NGINX_PID:-}" ]; then
    echo "nginx did not start:" >&2
    cat "$WORK/nginx.out" "$WORK/nginx/error.log" >&2 || true
    exit 1
  fi
  NGINX_URL="http://127.0.0.1:$NGINX_PORT"
fi

# wrk scripts: a POST of BODY to PATH, or (write) a fresh Idempotency-Key per request.
lua() {
  local file="$WORK/$1.lua" path="$2" body="$3" key="${4:-}"
  cat >"$file" <<EOF
local n = 0
local prefix = os.getenv("BENCH_KEYS") or "k"
local body = [[$body]]
request = function()
  local headers = { ["Content-Type"] = "application/json" }
  local b = body
  if "$key" == "header" then
    n = n + 1
    headers["Idempotency-Key"] = prefix .. "-" .. n
  elseif "$key" == "body" then
    n = n + 1
    b = string.gsub(body, "KEY", prefix .. "-" .. n)
  end
  return wrk.format("POST", "$path", headers, b)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
EOF
  echo "$file"
}
QUOTE='{"symbol":"TSLA"}'
EXPORT='{"source_id":"sales-2024","format":"csv"}'
TOOL_LUA=$(lua tool /api/stock/quote "$QUOTE")
CALL_LUA=$(lua call /v1/calls "{\"url\":\"$TOOLS/api/stock/quote\",\"payload\":$QUOTE}")
TOOL_WRITE_LUA=$(lua tool-write /api/exports "$EXPORT" header)
CALL_WRITE_LUA=$(lua call-write /v1/calls \
  "{\"url\":\"$TOOLS/api/exports\",\"payload\":$EXPORT,\"idempotent\":false,\"idempotency_key\":\"KEY\"}" body)

# answers_2xx NAME URL BODY [KEYED]: POST BODY to URL once, as the measured
# runs will; anything but 2xx (and, for a gateway, a `succeeded` record) stops
# the script before a figure of refusals is taken.
answers_2xx() {
  local name="$1" url="$2" body="$3" keyed="${4:-}" code
  local headers=(-H 'content-type: application/json')
  [ -n "$keyed" ] && headers+=(-H "Idempotency-Key: check-$name-$$")
  code=$(curl -s -o "$WORK/check.body" -w '%{http_code}' --max-time 30 -X POST "${headers[@]}" -d "$body" "$url") || code="no answer"
  case "$code" in
    2??) ;;
    *)
      echo "bench/gateway.sh: $name answered $code to POST $url, not 2xx; nothing measured:" >&2
      head -c 600 "$WORK/check.body" >&2 2>/dev/null || true
      echo >&2
      exit 1 ;;
  esac
  case "$name" in
    *gateway*)
      grep -q '"outcome":"succeeded"' "$WORK/check.body" || {
        echo "bench/gateway.sh: a call through $name did not succeed; nothing measured:" >&2
        head -c 600 "$WORK/check.body" >&2
        echo >&2
        exit 1
      } ;;
  esac
  echo "checked: $name answers 2xx" >&2
}
# record_shape FILE: a record with its call id and times blanked, which alone
# differ between two answers to the same call.
record_shape() {
  sed -E 's/"(call_id|ended_at)":"[^"]*"/"\1":""/g; s/"elapsed_ms":[0-9]+/"elapsed_ms":0/g' "$1"
}
READ_CALL="{\"url\":\"$TOOLS/api/stock/quote\",\"payload\":$QUOTE}"
WRITE_CALL="{\"url\":\"$TOOLS/api/exports\",\"payload\":$EXPORT,\"idempotent\":false,\"idempotency_key\":\"check-$$\"}"
if wanted read; then
  answers_2xx direct "$TOOLS/api/stock/quote" "$QUOTE"
  if [ -n "$NGINX_URL" ]; then answers_2xx nginx "$NGINX_URL/api/stock/quote" "$QUOTE"; fi
  answers_2xx forwarder "$FORWARDER/v1/calls" "$READ_CALL"
  answers_2xx forwarder-hyper "$FORWARDER_HYPER/v1/calls" "$READ_CALL"
  answers_2xx forwarder-record "$FORWARDER_RECORD/v1/calls" "$READ_CALL"
  cp "$WORK/check.body" "$WORK/floor.body"
  answers_2xx gateway "$GATEWAY/v1/calls" "$READ_CALL"
  # The floor is only a floor while it writes the gateway's own record.
  if ! cmp -s <(record_shape "$WORK/floor.body") <(record_shape "$WORK/check.body"); then
    echo "bench/gateway.sh: forwarder-record's answer is not the gateway's record; nothing measured:" >&2
    diff <(record_shape "$WORK/floor.body" | tr ',' '\n') <(record_shape "$WORK/check.body" | tr ',' '\n') >&2 || true
    exit 1
  fi
  echo "checked: forwarder-record answers the gateway's record" >&2
fi
if wanted write; then
  answers_2xx direct-write "$TOOLS/api/exports" "$EXPORT" keyed
  if [ -n "$NGINX_URL" ]; then answers_2xx nginx-write "$NGINX_URL/api/exports" "$EXPORT" keyed; fi
  answers_2xx gateway-write "$GATEWAY/v1/calls" "${WRITE_CALL/check-/check-sqlite-}"
  if [ -n "$GATEWAY_PG" ]; then
    answers_2xx gateway-pg-write "$GATEWAY_PG/v1/calls" "${WRITE_CALL/check-/check-pg-}"
  fi
fi

RESULTS="$WORK/results.txt"
: >"$RESULTS"
# measure LABEL PID URL LUA SECONDS: one wrk run; appends a result line.
measure() {
  local label="$1" pid="$2" url="$3" script="$4" secs="$5"
  local before tool_before out after tool_after
  before=$(ticks "$pid")
  tool_before=$(ticks "$TOOLS_PID")
  out=$(BENCH_KEYS="$label-$RANDOM$RANDOM" wrk -t1 -c"$CONNECTIONS" -d"${secs}s" --latency -s "$script" "$url" | grep '^WRK')
  after=$(ticks "$pid")
  tool_after=$(ticks "$TOOLS_PID")
  echo "$out" | awk -v label="$label" -v round="$ROUND" -v cpu=$((after - before)) -v tool=$((tool_after - tool_before)) -v hz="$HZ" '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    n = v["requests"]; rps = n / (v["duration_us"] / 1e6)
    printf "%s rps=%.0f p50_us=%d p99_us=%d cpu_us=%.1f tool_cpu_us=%.1f requests=%d errors=%d non2xx=%d round=%s\n",
      label, rps, v["p50_us"], v["p99_us"], cpu / hz * 1e6 / n, tool / hz * 1e6 / n, n, v["errors"], v["non2xx"], round
  }' | tee -a "$RESULTS"
  local refused
  refused=$(echo "$out" | sed -n 's/.*non2xx=\([0-9]*\).*/\1/p')
  if [ "${refused:-0}" -gt 0 ]; then
    echo "bench/gateway.sh: $label answered $refused request(s) with a status other than 2xx: its figures are void; stopping" >&2
    exit 1
  fi
}

# run_targets ROUND LUA-FOR-TOOL LUA-FOR-CALLS SUFFIX TARGET...
run_targets() {
  local round="$1" tool_lua="$2" call_lua="$3" suffix="$4"
  shift 4
  ROUND="$round"
  local targets=("$@")
  if [ $((round % 2)) -eq 1 ]; then
    local reversed=() i
    for ((i = ${#targets[@]} - 1; i >= 0; i--)); do reversed+=("${targets[$i]}"); done
    targets=("${reversed[@]}")
  fi
  local t
  for t in "${targets[@]}"; do
    case "$t" in
      direct) measure "direct$suffix" "$TOOLS_PID" "$TOOLS" "$tool_lua" "$DURATION" ;;
      nginx) measure "nginx$suffix" "$NGINX_PID" "$NGINX_URL" "$tool_lua" "$DURATION" ;;
      forwarder) measure "forwarder$suffix" "$FORWARDER_PID" "$FORWARDER" "$call_lua" "$DURATION" ;;
      forwarder-hyper) measure "forwarder-hyper$suffix" "$FORWARDER_HYPER_PID" "$FORWARDER_HYPER" "$call_lua" "$DURATION" ;;
      forwarder-record) measure "forwarder-record$suffix" "$FORWARDER_RECORD_PID" "$FORWARDER_RECORD" "$call_lua" "$DURATION" ;;
      gateway) measure "gateway$suffix" "$GATEWAY_PID" "$GATEWAY" "$call_lua" "$DURATION" ;;
      gateway-pg) measure "gateway-pg$suffix" "$GATEWAY_PG_PID" "$GATEWAY_PG" "$call_lua" "$DURATION" ;;
    esac
  done
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); wrk -t1 -c$CONNECTIONS -d${DURATION}s, $ROUNDS round(s)"
if wanted read; then
  READ_TARGETS=(direct forwarder forwarder-hyper forwarder-record gateway)
  [ -n "$NGINX_URL" ] && READ_TARGETS=(direct nginx forwarder forwarder-hyper forwarder-record gateway)
  echo "## warm-up (not counted)"
  DURATION_SAVED=$DURATION; DURATION=2
  run_targets 0 "$TOOL_LUA" "$CALL_LUA" "-warmup" "${READ_TARGETS[@]}" >/dev/null
  DURATION=$DURATION_SAVED
  echo "## read: POST /api/stock/quote (idempotent, unkeyed: not journaled)"
  for round in $(seq 0 $((ROUNDS - 1))); do
    run_targets "$round" "$TOOL_LUA" "$CALL_LUA" "" "${READ_TARGETS[@]}"
  done
fi
if wanted write; then
  WRITE_TARGETS=(direct gateway)
  [ -n "$NGINX_URL" ] && WRITE_TARGETS=(direct nginx gateway)
  [ -n "$GATEWAY_PG" ] && WRITE_TARGETS+=(gateway-pg)
  echo "## write: POST /api/exports, a fresh idempotency key per request (journaled by the gateway)"
  for round in $(seq 0 $((ROUNDS - 1))); do
    run_targets "$round" "$TOOL_WRITE_LUA" "$CALL_WRITE_LUA" "-write" "${WRITE_TARGETS[@]}"
  done
fi

# median LABEL FIELD: the median of FIELD over LABEL's rounds.
median() {
  awk -v label="$1" -v field="$2" '$1 == label { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == field) print kv[2] } }' "$RESULTS" \
    | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "" }'
}
summary() {
  local label
  printf '\n| %-16s | %9s | %8s | %8s | %11s | %12s |\n' target req/s p50_us p99_us cpu_us/call tool_cpu_us
  printf '|%s|%s:|%s:|%s:|%s:|%s:|\n' "------------------" "----------" "---------" "---------" "------------" "-------------"
  for label in "$@"; do
    [ -n "$(median "$label" rps)" ] || continue
    printf '| %-16s | %9s | %8s | %8s | %11s | %12s |\n' "$label" "$(median "$label" rps)" \
      "$(median "$label" p50_us)" "$(median "$label" p99_us)" "$(median "$label" cpu_us)" "$(median "$label" tool_cpu_us)"
  done
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
# paired A B FIELD: the median over rounds of each round's A/B — the two were
# measured minutes apart at most, so a machine that drifts moves both.
paired() {
  awk -v a="$1" -v b="$2" -v field="$3" '
    $1 == a || $1 == b {
      r = ""; x = ""
      for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "round") r = kv[2]; if (kv[1] == field) x = kv[2] }
      if ($1 == a) va[r] = x; else vb[r] = x
    }
    END { for (r in va) if ((r in vb) && vb[r] > 0) print va[r] / vb[r] }' "$RESULTS" \
    | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", v[int((NR + 1) / 2)]; else printf "n/a" }'
}
if wanted read || wanted write; then
  echo
  echo "## medians (cpu_us/call: the server's process; tool_cpu_us: the tool's, per call)"
  summary direct nginx forwarder forwarder-hyper forwarder-record gateway direct-write nginx-write gateway-write gateway-pg-write
  echo
  if wanted read; then
    echo "read:  gateway/nginx throughput $(ratio "$(median gateway rps)" "$(median nginx rps)") (goal >= 0.8)," \
      "CPU/call $(ratio "$(median gateway cpu_us)" "$(median nginx cpu_us)") (goal <= 2);" \
      "gateway/forwarder CPU/call $(ratio "$(median gateway cpu_us)" "$(median forwarder cpu_us)") (goal <= 1.15)," \
      "gateway/forwarder-hyper CPU/call $(ratio "$(median gateway cpu_us)" "$(median forwarder-hyper cpu_us)") (goal <= 1.1);" \
      "forwarder-record/forwarder-hyper $(ratio "$(median forwarder-record cpu_us)" "$(median forwarder-hyper cpu_us)") (the contract's floor)," \
      "gateway/forwarder-record $(ratio "$(median gateway cpu_us)" "$(median forwarder-record cpu_us)")"
    echo "read, paired by round (the median of each round's own ratio):" \
      "gateway/nginx throughput $(paired gateway nginx rps), CPU/call $(paired gateway nginx cpu_us);" \
      "gateway/forwarder CPU/call $(paired gateway forwarder cpu_us)," \
      "gateway/forwarder-hyper CPU/call $(paired gateway forwarder-hyper cpu_us);" \
      "forwarder-record/forwarder-hyper $(paired forwarder-record forwarder-hyper cpu_us)," \
      "gateway/forwarder-record $(paired gateway forwarder-record cpu_us)"
  fi
  if wanted write && [ -n "$NGINX_URL" ]; then
    echo "write: gateway/nginx throughput $(ratio "$(median gateway-write rps)" "$(median nginx-write rps)")," \
      "CPU/call $(ratio "$(median gateway-write cpu_us)" "$(median nginx-write cpu_us)")"
  fi
  if wanted write && [ -n "$GATEWAY_PG" ]; then
    echo "write: keyed writes on PostgreSQL/SQLite throughput $(ratio "$(median gateway-pg-write rps)" "$(median gateway-write rps)")" \
      "(goal >= 0.5), paired by round $(paired gateway-pg-write gateway-write rps)"
  fi
fi

# memory LABEL URL LUA PID: RSS growth of PID while IN_FLIGHT calls are held 2 s each.
memory() {
  local label="$1" url="$2" script="$3" pid="$4" before peak=0 rss wrk_pid
  before=$(rss_kib "$pid")
  wrk -t2 -c"$IN_FLIGHT" -d5s --timeout 10s -s "$script" "$url" >"$WORK/$label-memory.out" &
  wrk_pid=$!
  while kill -0 "$wrk_pid" 2>/dev/null; do
    rss=$(rss_kib "$pid")
    [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 0.1
  done
  wait "$wrk_pid" || true
  local done_line
  done_line=$(grep '^WRK' "$WORK/$label-memory.out" || true)
  echo "$label: VmRSS before ${before} KiB, peak ${peak} KiB, growth $(( (peak - before) )) KiB" \
    "= $(awk -v g=$((peak - before)) -v n="$IN_FLIGHT" 'BEGIN { printf "%.1f", g / n }') KiB per in-flight call ($done_line)"
  local refused
  refused=$(echo "$done_line" | sed -n 's/.*non2xx=\([0-9]*\).*/\1/p')
  if [ "${refused:-0}" -gt 0 ]; then
    echo "bench/gateway.sh: $label answered $refused request(s) with a status other than 2xx: its figure is void; stopping" >&2
    exit 1
  fi
}
if wanted memory; then
  echo
  echo "## memory: $IN_FLIGHT concurrent calls to a tool that holds each for 2 s (stock:slow)"
  HOLD=$(start hold 'http://' "$BIN/recourse" tools serve --port 0 --fault stock:slow --slow-ms 2000 \
    --max-in-flight $((IN_FLIGHT * 2)) --max-connections $((IN_FLIGHT * 4)))
  HOLD_LUA=$(lua hold /v1/calls "{\"url\":\"$HOLD/api/stock/quote\",\"payload\":$QUOTE}")
  export XDG_STATE_HOME="$WORK/state-memory"
  MEM_GATEWAY=$(start mem-gateway 'listening' "$BIN/recourse" serve --port 0 \
    --max-in-flight $((IN_FLIGHT * 2)) --max-connections $((IN_FLIGHT * 4)))
  MEM_FORWARDER=$(start mem-forwarder 'listening' "$BIN/recourse-bench" forward --port 0)
  MEM_FORWARDER_HYPER=$(start mem-forwarder-hyper 'listening' "$BIN/recourse-bench" forward --port 0 --client hyper)
  HOLD_CALL="{\"url\":\"$HOLD/api/stock/quote\",\"payload\":$QUOTE}"
  answers_2xx mem-gateway "$MEM_GATEWAY/v1/calls" "$HOLD_CALL"
  answers_2xx mem-forwarder "$MEM_FORWARDER/v1/calls" "$HOLD_CALL"
  answers_2xx mem-forwarder-hyper "$MEM_FORWARDER_HYPER/v1/calls" "$HOLD_CALL"
  memory "gateway (cold)" "$MEM_GATEWAY" "$HOLD_LUA" "$(cat "$WORK/mem-gateway.pid")"
  memory "gateway (warm)" "$MEM_GATEWAY" "$HOLD_LUA" "$(cat "$WORK/mem-gateway.pid")"
  memory "forwarder (cold)" "$MEM_FORWARDER" "$HOLD_LUA" "$(cat "$WORK/mem-forwarder.pid")"
  memory "forwarder-hyper (cold)" "$MEM_FORWARDER_HYPER" "$HOLD_LUA" "$(cat "$WORK/mem-forwarder-hyper.pid")"
fi

if wanted library; then
  echo
  echo "## library: Executor::execute against a raw reqwest POST, CPU time of the client's thread"
  "$BIN/recourse-bench" library --calls 20000 --rounds 5
fi
