#!/usr/bin/env bash
# soak.sh [--minutes N] [--sanitize] [--out FILE]: a long mixed run under churn.
#
# One tlsfront (2 workers, ticket keys from Redis) in front of the test
# backend, all on 127.0.0.1 in a temp dir, with for N minutes (default 30):
#   load    h2load --h1 keepalive (8 clients x 40 req/s), h2load --h1 with
#           "Connection: close" (10 new TLS connections a second, one request each),
#           h2load h2 (4 clients x 4 streams, 40 req/s each)
#   churn   SIGHUP every 10 s (alternating two configurations), a log rotation
#           (rename + SIGUSR1) every 30 s, the backend restarted every 2 min,
#           Redis restarted (empty) every 5 min
#   samples RSS and open fds of tlsfront every minute
# and then reports: requests (clients' view), 5xx answers inside and outside
# the backend-restart windows, access-log lines vs tlsfront_requests_total
# (lost lines), lines that are not valid JSON, sanitizer reports, tlsfront's
# exit status. Exit 0 only when nothing outside the restart windows failed,
# no line was lost or malformed, there was no sanitizer report and tlsfront
# exited 0. Not part of CI (too long); docs/performance.md "Soak" has its last result.
#
#   --sanitize  use the ASan+UBSan build (build-sanitize/) instead of build/
#   --out FILE  also write the report to FILE (default: build/soak-result.txt)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

minutes=30
sanitize=0
out=build/soak-result.txt
while (($#)); do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --sanitize) sanitize=1; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: scripts/soak.sh [--minutes N] [--sanitize] [--out FILE]" >&2; exit 2 ;;
  esac
done
[[ "$minutes" =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: --minutes takes a positive integer" >&2; exit 2; }
seconds=$((minutes * 60))

scripts/install-deps.sh
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD"
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if ((sanitize)); then
  dir=build-sanitize
  cmake -S . -B "$dir" -G Ninja -DTLSFRONT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
  export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
else
  dir=build
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
fi
cmake --build "$dir" --target tlsfront tlsfront_test_backend
bin=$root/$dir/tlsfront
backend_bin=$root/$dir/tests/tlsfront_test_backend

tmp=$(mktemp -d /tmp/tlsfront-soak.XXXXXX)
front_pid="" backend_pid="" redis_pid=""
load_pids=()
# shellcheck disable=SC2317  # called from the traps
cleanup() {
  trap - EXIT INT TERM
  for p in "${load_pids[@]}" "$front_pid" "$backend_pid" "$redis_pid"; do
    [[ -n "$p" ]] && kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${load_pids[@]}" "$front_pid" "$backend_pid" "$redis_pid"; do
    [[ -n "$p" ]] && wait "$p" 2>/dev/null || true
  done
  [[ -n "${SOAK_KEEP_TMP:-}" ]] && echo "soak.sh: kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

log() { printf '%s soak: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Waits up to 10 s for "$1" to accept TCP connections on 127.0.0.1.
wait_port() {
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

scripts/gen-test-pki.sh "$tmp/pki" --dev >/dev/null
redis_port=$(free_port)
backend_port=""

start_redis() {
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
    >>"$tmp/redis.log" 2>&1 &
  redis_pid=$!
  wait_port "$redis_port" && kill -0 "$redis_pid" 2>/dev/null ||
    { echo "soak.sh: redis-server did not start on $redis_port:" >&2; tail -3 "$tmp/redis.log" >&2; exit 1; }
}
# The first start binds a port the kernel picks (no race with other
# listeners on the machine); restarts bind that port again.
start_backend() {
  rm -f "$tmp/backend.port"
  setsid "$backend_bin" --listen "127.0.0.1:${backend_port:-0}" --port-file "$tmp/backend.port" \
    >>"$tmp/backend.log" 2>&1 &
  backend_pid=$!
  for _ in $(seq 200); do
    [[ -s "$tmp/backend.port" ]] && break
    kill -0 "$backend_pid" 2>/dev/null || { echo "soak.sh: the backend did not start:" >&2; tail -3 "$tmp/backend.log" >&2; exit 1; }
    sleep 0.05
  done
  [[ -s "$tmp/backend.port" ]] || { echo "soak.sh: the backend did not start" >&2; exit 1; }
  backend_port=$(<"$tmp/backend.port")
}
stop_pid() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# Two configurations that differ (upstream keepalive), so every SIGHUP makes
# a new generation.
write_config() {
  cat >"$tmp/tlsfront-$1.toml" <<EOF
workers = 2
shutdown_timeout = "10s"
[[listen]]
address = "127.0.0.1:${listen_port:-0}"
[tls]
certificate = "$tmp/pki/localhost.chain.pem"
key = "$tmp/pki/localhost.key"
trusted_ca = "$tmp/pki/root.pem"
[tls.ticket_keys]
source = "redis"
rotate_every = "1m"
  redis = "127.0.0.1:$redis_port"
[[upstream]]
name = "backend"
servers = ["127.0.0.1:$backend_port"]
keepalive = $2
[[route]]
path_prefix = "/"
upstream = "backend"
[log]
access_log = "$tmp/access.log"
[admin]
address = "127.0.0.1:${admin_port:-0}"
EOF
}

start_redis
start_backend
write_config a 32
cp "$tmp/tlsfront-a.toml" "$tmp/tlsfront.toml"
setsid "$bin" --config "$tmp/tlsfront.toml" 2>"$tmp/tlsfront.err" &
front_pid=$!
listen_port="" admin_port=""
for _ in $(seq 200); do
  listen_port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) (.*/\1/p' "$tmp/tlsfront.err" | head -1)
  admin_port=$(sed -n 's|.*admin: http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/tlsfront.err" | head -1)
  [[ -n "$listen_port" && -n "$admin_port" ]] && break
  kill -0 "$front_pid" 2>/dev/null || { cat "$tmp/tlsfront.err" >&2; exit 1; }
  sleep 0.05
done
[[ -n "$listen_port" && -n "$admin_port" ]] || { echo "soak.sh: tlsfront did not start" >&2; exit 1; }
# The reloads keep the ports the kernel picked.
write_config a 32
write_config b 16
log "tlsfront pid $front_pid on :$listen_port (admin :$admin_port), backend :$backend_port, redis :$redis_port; $minutes min"

url=https://127.0.0.1:$listen_port
h2load --h1 -c 8 --rps 40 -D "$seconds" "$url/soak/h1-keepalive" >"$tmp/load-h1.txt" 2>&1 &
load_pids+=($!)
# 10 new connections a second, one request each (--rps does not survive a reconnect).
h2load --h1 -r 10 -c $((seconds * 10)) -n $((seconds * 10)) -H 'Connection: close' "$url/soak/h1-close" \
  >"$tmp/load-h1-close.txt" 2>&1 &
load_pids+=($!)
h2load -c 4 -m 4 --rps 40 -D "$seconds" "$url/soak/h2" >"$tmp/load-h2.txt" 2>&1 &
load_pids+=($!)

: >"$tmp/windows"   # backend-restart windows: "start end" (epoch seconds)
: >"$tmp/samples"   # "minute rss_kib fds"
rotations=0 reloads=0 backend_restarts=0 redis_restarts=0
start=$(date +%s)
for ((t = 1; t <= seconds; t++)); do
  now=$(date +%s)
  ((start + t > now)) && sleep $((start + t - now))
  kill -0 "$front_pid" 2>/dev/null || { log "tlsfront died at ${t}s"; break; }
  if ((t % 60 == 0)); then
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$front_pid/status")
    fds=$(find "/proc/$front_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
    echo "$((t / 60)) $rss $fds" >>"$tmp/samples"
  fi
  if ((t % 10 == 0)); then
    if ((reloads % 2 == 0)); then cp "$tmp/tlsfront-b.toml" "$tmp/tlsfront.toml"; else cp "$tmp/tlsfront-a.toml" "$tmp/tlsfront.toml"; fi
    kill -HUP "$front_pid"
    reloads=$((reloads + 1))
  fi
  if ((t % 30 == 0)); then
    rotations=$((rotations + 1))
    mv "$tmp/access.log" "$tmp/access.log.$rotations"
    kill -USR1 "$front_pid"
  fi
  if ((t % 120 == 0)); then
    w_start=$(date +%s.%N)
    stop_pid "$backend_pid"
    start_backend
    echo "$w_start $(date +%s.%N)" >>"$tmp/windows"
    backend_restarts=$((backend_restarts + 1))
  fi
  if ((t % 300 == 0)); then
    stop_pid "$redis_pid"
    start_redis
    redis_restarts=$((redis_restarts + 1))
  fi
done
for p in "${load_pids[@]}"; do wait "$p" || true; done
load_pids=()
sleep 1  # the last lines' 50 ms hand-over

metrics=$(curl -s "http://127.0.0.1:$admin_port/metrics" || true)
requests_total=$(awk '/^tlsfront_requests_total\{/ {s += $2} END {printf "%d", s}' <<<"$metrics")
kill -TERM "$front_pid"
front_status=0
wait "$front_pid" || front_status=$?
front_pid=""
stop_pid "$backend_pid"; backend_pid=""
stop_pid "$redis_pid"; redis_pid=""

# The access log: every line valid JSON; 5xx in and out of the windows (a
# request is in a window when it started in it or within 1 s after).
read -r lines bad_json in_window out_window < <(python3 - "$tmp" <<'PY'
import glob, json, sys, datetime
tmp = sys.argv[1]
windows = [tuple(map(float, l.split())) for l in open(f"{tmp}/windows")]
lines = bad = inw = outw = 0
for path in sorted(glob.glob(f"{tmp}/access.log*")):
    with open(path, "rb") as f:
        for raw in f:
            lines += 1
            try:
                o = json.loads(raw)
            except ValueError:
                bad += 1
                continue
            if o["status"] < 500:
                continue
            t = datetime.datetime.fromisoformat(o["time"].replace("Z", "+00:00")).timestamp()
            if any(a - 1 <= t <= b + 1 for a, b in windows):
                inw += 1
            else:
                outw += 1
print(lines, bad, inw, outw)
PY
)
sanitizer=$(grep -c -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$tmp/tlsfront.err" || true)
client_summary() {
  local f=$1
  local req codes
  req=$(grep -m1 '^requests:' "$f" || echo "requests: (no summary)")
  codes=$(grep -m1 '^status codes:' "$f" || echo "status codes: -")
  echo "  $(basename "$f" .txt): ${req#requests: }; ${codes#status codes: }"
}

{
  echo "soak: $minutes min, $dir, $(date -u +%Y-%m-%dT%H:%MZ), tlsfront $("$bin" --version 2>/dev/null || echo '?')"
  echo "churn: $reloads reloads, $rotations log rotations, $backend_restarts backend restarts, $redis_restarts redis restarts"
  echo "clients (h2load):"
  client_summary "$tmp/load-h1.txt"
  client_summary "$tmp/load-h1-close.txt"
  client_summary "$tmp/load-h2.txt"
  echo "5xx answers: $in_window in backend-restart windows, $out_window outside them"
  echo "access log: $lines lines, tlsfront_requests_total $requests_total, lost $((requests_total - lines)), not valid JSON $bad_json"
  echo "rss KiB / open fds per minute:"
  awk '{printf "  %3d min  %7d KiB  %4d fds\n", $1, $2, $3}' "$tmp/samples"
  echo "sanitizer reports: $sanitizer; tlsfront exit status: $front_status"
} | tee "$out"

if ((out_window > 0 || requests_total != lines || bad_json > 0 || sanitizer > 0 || front_status != 0)); then
  echo "soak: FAILED" | tee -a "$out"
  exit 1
fi
echo "soak: passed" | tee -a "$out"
