#!/usr/bin/env bash
# The MCP proxy benchmark: `recourse mcp proxy` against the `mcp-proxy` crate
# (0.6.0, installed with cargo into target/bench-tools and kept), both serving
# Streamable HTTP in front of the same stdio upstream (`recourse tools serve
# --mcp`), under the same closed loop of `tools/call` (recourse-bench mcp-load:
# one rmcp session, --concurrency callers), in one run; with a direct stdio
# connection to the upstream, recourse's stdio front, and the floor of both
# fronts (`recourse-bench mcp-forward`: rmcp's server in front of rmcp's
# client, no recourse logic, over stdio and over HTTP), for reference.
# Then the fault scripts (tests/mcp-clients/python/servers/scripted.py)
# through both proxies: what reached the upstream, what executed, and what
# the client was told (bench/mcp_fault_client.py, the official Python SDK).
#
#   bench/mcp-proxy.sh [--duration SECS] [--rounds N] [--concurrency N]
#                      [--skip-build] [--only load|faults]...
#
# CPU per call is the proxy process's own utime+stime (/proc/PID/stat, not
# its upstream's) over the measured window divided by the calls completed;
# for the direct rows it is the upstream's. Each figure is the median over
# the rounds, which alternate the order of the targets.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=5
ROUNDS=3
CONCURRENCY=8
BUILD=1
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --skip-build) BUILD=0; shift ;;
    --only) ONLY+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "bench/mcp-proxy.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
wanted() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local part
  for part in "${ONLY[@]}"; do [ "$part" = "$1" ] && return 0; done
  return 1
}

if [ "$BUILD" -eq 1 ]; then
  cargo build --release -p recourse-cli -p recourse-bench
fi
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
BIN="$TARGET/release"
TOOLS_ROOT="$TARGET/bench-tools"
MCP_PROXY="$TOOLS_ROOT/bin/mcp-proxy"
if [ ! -x "$MCP_PROXY" ] || ! grep -q '"mcp-proxy 0\.6\.0 ' "$TOOLS_ROOT/.crates.toml" 2>/dev/null; then
  echo "installing mcp-proxy 0.6.0 into $TOOLS_ROOT (once)" >&2
  cargo install mcp-proxy --version 0.6.0 --locked --root "$TOOLS_ROOT" --quiet
fi
VENV="$TARGET/mcp-client-venv"
if wanted faults && [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/mcp-clients/python/requirements.txt
fi

WORK=$(mktemp -d /tmp/recourse-mcp-bench.XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
failed() { echo "bench/mcp-proxy.sh: $1 failed; its stderr:" >&2; tail -n 20 "$WORK/stderr.log" >&2; exit 1; }

UPSTREAM="$BIN/recourse tools serve --mcp --port 0"
TOOL=weather_current
ARGS='{"location": "Flower Mound, Texas, US"}'
LOAD=("$BIN/recourse-bench" mcp-load --duration "$DURATION" --concurrency "$CONCURRENCY" --args "$ARGS")

# Waits for the line "PREFIX URL" in OUT from the server PID just started
# (NAME, for the error); prints "PID URL".
listening() {
  local pid=$1 out=$2 prefix=$3 name=$4 i
  PIDS+=("$pid")
  for i in $(seq 1 100); do
    if grep -q "^$prefix" "$out" 2>/dev/null; then
      echo "$pid $(sed -n "s/^$prefix//p" "$out" | head -1)"
      return 0
    fi
    sleep 0.1
  done
  echo "$name did not start (see $WORK/stderr.log)" >&2
  return 1
}

# Starts recourse's HTTP front with the upstream arguments given
# (`-- CMD ARGS…` or `--upstream NAME=URL`); prints "PID URL".
start_recourse() {
  local out="$WORK/recourse.$RANDOM.out"
  "$BIN/recourse" mcp proxy --http --port 0 --journal "$WORK/proxy.$RANDOM.db" "$@" >"$out" 2>>"$WORK/stderr.log" &
  listening $! "$out" 'recourse mcp proxy listening on ' 'recourse mcp proxy'
}

# Starts the bare rmcp forwarder over Streamable HTTP; prints "PID URL".
start_forward() {
  local out="$WORK/forward.$RANDOM.out"
  # shellcheck disable=SC2086
  "$BIN/recourse-bench" mcp-forward --http -- $UPSTREAM >"$out" 2>>"$WORK/stderr.log" &
  listening $! "$out" 'listening on ' 'recourse-bench mcp-forward'
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Starts mcp-proxy with backend "up" = $1 (a TOML table body) and extra
# backend settings $2; prints "PID URL".
start_mcp_proxy() {
  local port config
  port=$(free_port)
  config="$WORK/mcp-proxy.$port.toml"
  cat >"$config" <<EOF
[proxy]
name = "bench"

[proxy.listen]
host = "127.0.0.1"
port = $port

# Its default (info) writes lines per call to stderr; recourse's proxy writes none.
[observability]
log_level = "warn"

[[backends]]
name = "up"
$1
$2
EOF
  "$MCP_PROXY" --config "$config" >>"$WORK/stderr.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  local i
  for i in $(seq 1 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then
      echo "$pid http://127.0.0.1:$port/"
      return 0
    fi
    sleep 0.1
  done
  echo "mcp-proxy did not start (see $WORK/stderr.log)" >&2
  return 1
}

toml_command() { # a command line as mcp-proxy's stdio backend
  python3 -c 'import json,shlex,sys; w=shlex.split(sys.argv[1]); print("transport = \"stdio\"\ncommand = %s\nargs = %s" % (json.dumps(w[0]), json.dumps(w[1:])))' "$1"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
field() { python3 -c 'import json,sys; v=json.loads(sys.stdin.read())[sys.argv[1]]; print("nan" if v is None else v)' "$1"; }

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

if wanted load; then
  echo "== load: $TOOL through each, $CONCURRENCY callers, ${DURATION}s x $ROUNDS rounds" >&2
  NAMES=(direct-stdio rmcp-forward-stdio recourse-stdio rmcp-forward-http recourse-http mcp-proxy-http)
  for round in $(seq 1 "$ROUNDS"); do
    order=("${NAMES[@]}")
    [ $((round % 2)) -eq 0 ] && order=(mcp-proxy-http recourse-http rmcp-forward-http recourse-stdio rmcp-forward-stdio direct-stdio)
    for name in "${order[@]}"; do
      case "$name" in
        direct-stdio)
          "${LOAD[@]}" --tool "$TOOL" --command "$UPSTREAM" >"$WORK/$name.$round.json" 2>>"$WORK/stderr.log" || failed "$name" ;;
        rmcp-forward-stdio)
          "${LOAD[@]}" --tool "$TOOL" --command "$BIN/recourse-bench mcp-forward -- $UPSTREAM" \
            >"$WORK/$name.$round.json" 2>>"$WORK/stderr.log" || failed "$name" ;;
        rmcp-forward-http)
          read -r pid url < <(start_forward)
          "${LOAD[@]}" --tool "$TOOL" --url "$url" --server-pid "$pid" >"$WORK/$name.$round.json" 2>>"$WORK/stderr.log" || failed "$name"
          stop "$pid" ;;
        recourse-stdio)
          "${LOAD[@]}" --tool "$TOOL" --command "$BIN/recourse mcp proxy --journal $WORK/stdio.$round.db -- $UPSTREAM" \
            >"$WORK/$name.$round.json" 2>>"$WORK/stderr.log" || failed "$name" ;;
        recourse-http)
          # shellcheck disable=SC2086
          read -r pid url < <(start_recourse -- $UPSTREAM)
          "${LOAD[@]}" --tool "$TOOL" --url "$url" --server-pid "$pid" >"$WORK/$name.$round.json" 2>>"$WORK/stderr.log" || failed "$name"
          stop "$pid" ;;
        mcp-proxy-http)
          read -r pid url < <(start_mcp_proxy "$(toml_command "$UPSTREAM")" "")
          "${LOAD[@]}" --tool "up/$TOOL" --url "$url" --server-pid "$pid" >"$WORK/$name.$round.json" 2>>"$WORK/stderr.log" || failed "$name"
          stop "$pid" ;;
      esac
      echo "round $round $name: $(cat "$WORK/$name.$round.json")" >&2
    done
  done
  echo
  echo "| path ($CONCURRENCY callers, ${DURATION}s, median of $ROUNDS) | calls/s | p50 ms | p99 ms | CPU µs/call (the proxy's; direct: the upstream's) |"
  echo "|---|---:|---:|---:|---:|"
  for name in "${NAMES[@]}"; do
    row="| $name"
    for f in calls_per_sec p50_ms p99_ms server_cpu_us_per_call; do
      value=$(for r in $(seq 1 "$ROUNDS"); do field "$f" <"$WORK/$name.$r.json"; done | median)
      row="$row | $(printf '%.1f' "$value")"
      eval "${name//-/_}_$f=$value"
    done
    echo "$row |"
  done
  # shellcheck disable=SC2154
  awk -v rt="$recourse_http_calls_per_sec" -v mt="$mcp_proxy_http_calls_per_sec" \
      -v rc="$recourse_http_server_cpu_us_per_call" -v mc="$mcp_proxy_http_server_cpu_us_per_call" \
      -v st="$recourse_stdio_calls_per_sec" -v dt="$direct_stdio_calls_per_sec" \
      -v ft="$rmcp_forward_http_calls_per_sec" -v fc="$rmcp_forward_http_server_cpu_us_per_call" \
      -v fst="$rmcp_forward_stdio_calls_per_sec" -v fsc="$rmcp_forward_stdio_server_cpu_us_per_call" \
      -v sc="$recourse_stdio_server_cpu_us_per_call" 'BEGIN {
    printf "\nrecourse / mcp-proxy (HTTP): throughput %.2fx (goal >= 1.1), CPU per call %.2fx (goal <= 0.8)\n", rt/mt, rc/mc
    printf "the rmcp forwarder / mcp-proxy (HTTP), the floor: throughput %.2fx, CPU per call %.2fx\n", ft/mt, fc/mc
    printf "recourse / the rmcp forwarder (HTTP): throughput %.2fx, CPU per call %.2fx\n", rt/ft, rc/fc
    printf "recourse stdio front / direct stdio: throughput %.2fx (goal >= 0.75)\n", st/dt
    printf "the rmcp forwarder (stdio) / direct stdio, the floor: throughput %.2fx\n", fst/dt
    printf "recourse / the rmcp forwarder (stdio): throughput %.2fx, CPU per call %.2fx\n", st/fst, sc/fsc
  }'
fi

if wanted faults; then
  echo
  echo "== faults: one write, then one read, through each proxy" >&2
  SCRIPTED="$PWD/tests/mcp-clients/python/servers/scripted.py"
  PY="$VENV/bin/python"
  # mcp-proxy as its README configures resilience: retries and a breaker.
  RESILIENCE='[backends.retry]
max_retries = 3
initial_backoff_ms = 100
[backends.circuit_breaker]
failure_rate_threshold = 0.5
minimum_calls = 5
wait_duration_seconds = 30'
  echo "| fault script | proxy | write executions (reached upstream) | write: the client was told | read after it |"
  echo "|---|---|---:|---|---|"
  for script in drop internal_after_commit rate_limited not_retryable unavailable too_many; do
    for proxy in recourse mcp-proxy; do
      log="$WORK/$script.$proxy.log"
      upstream_pid=""
      case "$script" in
        unavailable|too_many)
          "$PY" "$SCRIPTED" --script "$script" --log "$log" --http 0 >"$WORK/up.out" 2>>"$WORK/stderr.log" &
          upstream_pid=$!
          PIDS+=("$upstream_pid")
          for i in $(seq 1 50); do grep -q listening "$WORK/up.out" 2>/dev/null && break; sleep 0.1; done
          up_url=$(sed -n 's/^listening on //p' "$WORK/up.out")
          recourse_up="--upstream up=$up_url"
          toml="transport = \"http\"
url = \"$up_url\""
          ;;
        *)
          recourse_up="-- $PY $SCRIPTED --script $script --log $log"
          toml=$(toml_command "$PY $SCRIPTED --script $script --log $log")
          ;;
      esac
      if [ "$proxy" = recourse ]; then
        # shellcheck disable=SC2086
        read -r pid url < <(start_recourse --backoff-ms 100 $recourse_up)
        prefix=""
      else
        read -r pid url < <(start_mcp_proxy "$toml" "$RESILIENCE")
        prefix="up/"
      fi
      told=$("$PY" bench/mcp_fault_client.py "$url" "$prefix" 2>>"$WORK/stderr.log" || echo '{}')
      stop "$pid"
      [ -n "$upstream_pid" ] && stop "$upstream_pid"
      python3 - "$script" "$proxy" "$log" "$told" <<'PY'
import json, sys
script, proxy, log, told = sys.argv[1:]
try:
    entries = [json.loads(l) for l in open(log) if l.strip()]
except FileNotFoundError:
    entries = []
writes = [e for e in entries if e["tool"] in ("write", "?")]
executed = sum(1 for e in writes if e["tool"] == "write" and e["executed"])
times = [e["at"] for e in writes]
gaps = ", ".join(f"{b - a:.2f}s" for a, b in zip(times, times[1:]))
reached = f"{executed} ({len(writes)}{'; gaps ' + gaps if gaps else ''})"
def say(t):
    if not t:
        return "nothing (client failed)"
    if "jsonrpc_error" in t:
        return f"JSON-RPC error {t['jsonrpc_error']}: {t['text'][:70]}"
    if "timeout" in t:
        return "no answer in 60 s"
    if "exception" in t:
        return f"{t['exception']}: {t['text'][:70]}"
    if not t["is_error"]:
        return "success"
    extra = f" `{t['code']}`, retryable {str(t['retryable']).lower()}" if t.get("code") else ""
    return f"isError{extra}: {t['text'][:70]}"
t = json.loads(told) if told.strip() else {}
row = [script, proxy, reached, say(t.get("write")), say(t.get("read_after"))]
print("| " + " | ".join(x.replace("|", "/").replace("\n", " ") for x in row) + " |")
PY
    done
  done
fi
