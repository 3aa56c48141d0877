#!/usr/bin/env bash
# callgrind.sh [--mode full|resumed|h1|h2|h2c|static_h1|static_h2|static_large] [--counts "A B"] [--keep DIR] [--no-request-id] BIN [BIN_B]
#
# Instructions per TLS handshake (issue #18) or per proxied request of a
# tlsfront binary, counted by callgrind: the proxy runs under
# `valgrind --tool=callgrind` (one worker, the bench's TLS settings, an nginx
# backend answering 64 octets over HTTP/1.1 and, for h2c, over HTTP/2 with
# prior knowledge), once per count in --counts (a fresh proxy each time):
#   full | resumed   build/tests/tlsfront_hsload makes N handshakes + one
#                    request each (counts "200 1200")
#   h1 | h2 | h2c    h2load makes N requests over 20 TLS connections, 10 in
#                    flight on each (HTTP/1.1 pipelined, or HTTP/2 streams),
#                    to an HTTP/1.1 upstream, or (h2c) HTTP/2 from the client
#                    and to the upstream (counts "4000 24000")
#   static_h1 | static_h2  the same h2load runs for a 2,048-octet file the
#                    proxy serves itself (a route with alias, the bench's
#                    static_small), over HTTP/1.1 or HTTP/2: no upstream;
#                    the proxy's glibc copies with vector loops, never
#                    `rep movsb` (GLIBC_TUNABLES rep_movsb/rep_stosb
#                    thresholds 1 GiB): callgrind counts every iteration of
#                    a `rep movsb` as an instruction, one per octet, so a
#                    copy of 4 KiB or more (glibc's threshold) would read as
#                    thousands of instructions where it takes ~100 cycles,
#                    and a proxy that copies in larger pieces would look
#                    slower than one copying the same octets in small ones
#   static_large     a 5 MiB file the proxy serves (the bench's
#                    static_large) over HTTP/1.1, 2 connections, one request
#                    at a time on each (counts "4 24"): instructions per
#                    5 MiB response
# The figure is (Ir(last count) - Ir(first count)) / (last - first):
# start-up, shutdown, the connections' handshakes and each generator slot's
# first (full) handshake of a resumed run cancel out. With BIN_B, both
# binaries are measured alternately and the ratio printed. A proxy's count
# moves by ~0.1-0.3 % between runs on a loaded host (how the loop batches
# depends on timing): compare paired, repeated runs for smaller changes.
#
# BIN may be the word `nghttpx` (h1, h2 and h2c modes): the peer, run as the
# bench runs it (scripts/bench.sh's options: one single-threaded process,
# X-Forwarded-For added, an access log; Debian's build, on jemalloc), with
# the same backend, TLS settings and h2load runs. nghttpx makes no request
# ID; --no-request-id has tlsfront make none either (request_id_header = "":
# no ID generated, sent upstream or logged), for the same work.
# BIN may be the word `h2o` (static_h1, static_h2 and static_large modes): Debian's h2o
# 2.2 as scripts/bench.sh configures it (num-threads 1, file.dir for
# /static, its access log, TLS 1.3 cipher suites and groups from an
# OPENSSL_CONF), serving the same file. h2o forks a neverbleed process for
# its private-key operations; it runs under callgrind too (its own
# out-file) and is not counted: the handshakes it serves cancel out.
#
# Loopback only; every process started here is stopped by its PID on exit.
# --keep DIR keeps the callgrind.out files (callgrind_annotate --inclusive=yes).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/scripts/h2o-conf.sh"
mode=full
counts=
keep=
request_id_line=
concurrency=${CG_CONCURRENCY:-8}
while [[ $# -gt 0 ]]; do
  case $1 in
    --mode) mode=$2; shift 2 ;;
    --counts) counts=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --no-request-id) request_id_line='request_id_header = ""'; shift ;;
    -h|--help) sed -n 2,51p "$0"; exit 0 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { echo "usage: $0 [--mode full|resumed|h1|h2|h2c|static_h1|static_h2|static_large] [--counts \"A B\"] [--keep DIR] [--no-request-id] BIN [BIN_B]" >&2; exit 2; }
case $mode in
  full|resumed) unit=handshake; counts=${counts:-"200 1200"} ;;
  h1|h2|h2c|static_h1|static_h2|static_large) unit=request
    [[ $mode == static_large ]] && counts=${counts:-"4 24"}
    counts=${counts:-"4000 24000"}
    command -v h2load >/dev/null || { echo "h2load not found (scripts/install-deps.sh installs nghttp2-client)" >&2; exit 2; } ;;
  *) echo "--mode: full, resumed, h1, h2, h2c, static_h1, static_h2 or static_large, not '$mode'" >&2; exit 2 ;;
esac
bins=("$@")
for b in "${bins[@]}"; do
  if [[ $b == nghttpx && ! $mode =~ ^(h1|h2|h2c)$ ]]; then
    echo "nghttpx is measured in the h1, h2 and h2c modes" >&2; exit 2
  fi
  if [[ $b == h2o && ! $mode =~ ^static_ ]]; then
    echo "h2o is measured in the static_* modes" >&2; exit 2
  fi
done
hsload=$repo/build/tests/tlsfront_hsload
[[ -x $hsload ]] || { echo "build $hsload first (cmake --build build --target tlsfront_hsload)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/callgrind.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$repo/scripts/gen-test-pki.sh" "$tmp/pki" >/dev/null 2>&1
backend_port=$(free_port)
backend_h2c_port=$(free_port)
mkdir -p "$tmp/backend"
body=$(printf 'tlsfront bench backend %*s' 40 '' | tr ' ' '.')
cat >"$tmp/backend/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/backend/nginx.pid;
error_log $tmp/backend/error.log warn;
$( ((EUID == 0)) && echo "user root;")
events { worker_connections 1024; }
http {
  client_body_temp_path $tmp/backend/cb; proxy_temp_path $tmp/backend/p;
  fastcgi_temp_path $tmp/backend/f; uwsgi_temp_path $tmp/backend/u; scgi_temp_path $tmp/backend/s;
  access_log off;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:$backend_port;
    location / { default_type text/plain; return 200 "$body"; }
  }
  server {
    listen 127.0.0.1:$backend_h2c_port http2;
    location / { default_type text/plain; return 200 "$body"; }
  }
}
EOF
nginx -p "$tmp/backend" -c "$tmp/backend/nginx.conf" >"$tmp/backend/stderr" 2>&1 &
pids+=($!)

mkdir -p "$tmp/www"
head -c 2048 /dev/urandom >"$tmp/www/small.js"
[[ $mode == static_large ]] && head -c $((5 * 1024 * 1024)) /dev/urandom >"$tmp/www/large.bin"
static_route=
[[ $mode == static_* ]] && static_route=$(printf '[[route]]\npath_prefix = "/static/"\nalias = "%s"' "$tmp/www")

port=$(free_port)
cat >"$tmp/tlsfront.toml" <<EOF
workers = 1
$request_id_line
[[listen]]
address = "127.0.0.1:$port"
[tls]
protocols = ["TLSv1.2", "TLSv1.3"]
ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
groups = "X25519:P-256"
prefer_server_ciphers = true
certificate = "$tmp/pki/localhost.chain.pem"
key = "$tmp/pki/localhost.key"
trusted_ca = "$tmp/pki/root.pem"
session_tickets = true
[tls.session_cache]
enabled = true
size = "10m"
timeout = "1d"
[limits]
keepalive_requests = 1000000000  # as the bench: h2load's connections last the whole run
[[upstream]]
name = "backend"
servers = ["127.0.0.1:$backend_port"]
keepalive = 64
keepalive_timeout = "60s"
[[upstream]]
name = "backend_h2c"
protocol = "h2c"
servers = ["127.0.0.1:$backend_h2c_port"]
keepalive_requests = 1000000000
$static_route
[[route]]
path_prefix = "/h2up/"
upstream = "backend_h2c"
[[route]]
path_prefix = "/"
upstream = "backend"
[log]
access_log = "$tmp/access.log"
level = "warn"
[admin]
enabled = false
EOF

ciphers_of() { sed -n "s/^$1 = \"\(.*\)\"\$/\1/p" "$tmp/tlsfront.toml"; }

# h2o's configuration, as scripts/bench.sh's (scripts/h2o-conf.sh; its
# /static location, no proxied paths), in $tmp/h2o.
mkdir -p "$tmp/h2o"
{
  h2o_conf "$tmp/h2o" "$port" "$tmp/pki" "$(ciphers_of ciphersuites)" "$(ciphers_of ciphers)" 1000
  printf '      /static:\n        file.dir: %s\n' "$tmp/www"
} >"$tmp/h2o/h2o.conf"

# proxy_command BIN: the command line of the proxy measured.
proxy_command() {
  if [[ $1 == h2o ]]; then
    printf '%s\n' h2o -c "$tmp/h2o/h2o.conf"
    return
  fi
  if [[ $1 != nghttpx ]]; then
    printf '%s\n' "$1" --config "$tmp/tlsfront.toml"
    return
  fi
  printf '%s\n' nghttpx --conf=/dev/null "--frontend=127.0.0.1,$port" "--backend=127.0.0.1,$backend_port" \
    "--backend=127.0.0.1,$backend_h2c_port;/h2up/;proto=h2" --single-process --single-thread --workers=1 \
    --tls-min-proto-version=TLSv1.2 "--ciphers=$(sed -n 's/^ciphers = "\(.*\)"$/\1/p' "$tmp/tlsfront.toml")" \
    "--tls13-ciphers=$(sed -n 's/^ciphersuites = "\(.*\)"$/\1/p' "$tmp/tlsfront.toml")" --ecdh-curves=X25519:P-256 \
    --no-ocsp --no-server-push --no-via --add-x-forwarded-for --backend-connections-per-host=64 \
    --backend-keep-alive-timeout=60s --frontend-keep-alive-timeout=75s "--accesslog-file=$tmp/nghttpx-access.log" \
    "--errorlog-file=$tmp/nghttpx-error.log" --log-level=WARN "$tmp/pki/localhost.key" "$tmp/pki/localhost.chain.pem"
}

# run BIN COUNT OUT: Ir of one proxy process that served COUNT handshakes or requests.
run() {
  local bin=$1 count=$2 out=$3 vpid i cmd=()
  mapfile -t cmd < <(proxy_command "$bin")
  local envs=()
  [[ $mode == static_* ]] && envs+=(GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1073741824:glibc.cpu.x86_rep_stosb_threshold=1073741824)
  if [[ $bin == h2o ]]; then
    # Each process its own out-file (neverbleed's is not counted).
    env "${envs[@]}" OPENSSL_CONF="$tmp/h2o/openssl.cnf" valgrind --tool=callgrind --callgrind-out-file="$out.%p" \
      "${cmd[@]}" >"$tmp/proxy.out" 2>&1 &
  else
    env "${envs[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" >"$tmp/proxy.out" 2>&1 &
  fi
  vpid=$!
  pids+=("$vpid")
  # run() runs in a command substitution, a subshell without the script's
  # EXIT trap: its own stops the proxy when a failed run exits here.
  # (The PID is expanded now: vpid is local, gone when the trap runs.)
  trap "kill $vpid 2>/dev/null || true; wait $vpid 2>/dev/null || true" EXIT
  for ((i = 0; i < 600; i++)); do
    [[ -n $(ss -Htln "sport = :$port") ]] && break
    kill -0 "$vpid" 2>/dev/null || { cat "$tmp/proxy.out" >&2; exit 1; }
    sleep 0.1
  done
  if [[ $unit == handshake ]]; then
    "$hsload" --connect "127.0.0.1:$port" --mode "$mode" --count "$count" \
      --concurrency "$concurrency" --timeout-ms 60000 >"$tmp/hs.out" 2>&1 || { cat "$tmp/hs.out" >&2; exit 1; }
    cat "$tmp/hs.out" >&2
    grep -q ' errors=0 ' "$tmp/hs.out" || { cat "$tmp/hs.out" >&2; exit 1; }
  else
    local args=(-c20 -m10 -t1 -n "$count") path=/
    [[ $mode == h1 || $mode == static_h1 || $mode == static_large ]] && args+=(--h1)
    [[ $mode == static_large ]] && args=(-c2 -m1 -t1 -n "$count" --h1)
    [[ $mode == h2c ]] && path=/h2up/
    [[ $mode == static_* ]] && path=/static/small.js
    [[ $mode == static_large ]] && path=/static/large.bin
    timeout 600 h2load "${args[@]}" "https://127.0.0.1:$port$path" >"$tmp/h2load.out" 2>&1 \
      || { cat "$tmp/h2load.out" >&2; exit 1; }
    grep '^requests:' "$tmp/h2load.out" >&2
    grep -q " $count succeeded, 0 failed, 0 errored" "$tmp/h2load.out" || { cat "$tmp/h2load.out" >&2; exit 1; }
  fi
  kill -TERM "$vpid"
  wait "$vpid" || true
  if [[ $bin == h2o ]]; then
    mv "$out.$vpid" "$out"
    rm -f "$out".*
  fi
  grep -E '^(summary|totals):' "$out" | head -n 1 | awk '{print $2}'
}

read -r -a cs <<<"$counts"
first=${cs[0]} last=${cs[${#cs[@]} - 1]}
declare -A per
for b in "${!bins[@]}"; do
  bin=${bins[$b]}
  lo=$(run "$bin" "$first" "$tmp/cg.$b.$first")
  hi=$(run "$bin" "$last" "$tmp/cg.$b.$last")
  per[$b]=$(( (hi - lo) / (last - first) ))
  printf '%s mode=%s Ir(%d)=%d Ir(%d)=%d instructions_per_%s=%d\n' \
    "$bin" "$mode" "$first" "$lo" "$last" "$hi" "$unit" "${per[$b]}"
  if [[ -n $keep ]]; then mkdir -p "$keep"; cp "$tmp/cg.$b.$first" "$tmp/cg.$b.$last" "$keep/"; fi
done
if [[ ${#bins[@]} -eq 2 ]]; then
  awk -v a="${per[0]}" -v b="${per[1]}" 'BEGIN { printf "ratio A/B = %.4f (%+.2f %%)\n", a / b, (a / b - 1) * 100 }'
fi
