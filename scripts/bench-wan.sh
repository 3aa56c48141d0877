#!/usr/bin/env bash
# bench-wan.sh [--profile lan|4g|3g] [--rtt MS] [--rate KBIT] [--loss PCT] [--queue PACKETS]
#              [--samples N] [--servers "tlsfront ..."] [--cases "new ..."] [--burst N] [--seed N] [--out FILE]
#
# The weak-network benchmark (issue #14 §3): what each round-trip saver of a
# TLS edge buys a client on an emulated mobile link, in milliseconds and in
# round trips. Root only (network namespaces, TUN devices); public tools and
# the project's own test tools only.
#
# The link: two network namespaces made here, "near" (the client) and "far"
# (the servers and their backend), joined by tlsfront_delay_line
# (tests/tools/wan/), a user-space delay line over two TUN devices — this
# machine's kernel has no netem qdisc. It keeps packet order, serializes at
# the bottleneck rate behind a drop-tail queue, drops packets at random (a
# fixed seed), delays each direction by RTT/2, and exits by itself after a
# bounded lifetime; it runs at real-time priority (chrt -f 10), so that a busy
# machine does not stretch the link. Addresses: near 198.18.0.1, far
# 198.18.0.2 (RFC 2544's benchmarking range) and loopback; MTU 1500.
# net.ipv4.tcp_fastopen is 1 (client) in near and 3 (client + server) in far.
#
# Profiles (--rtt/--rate/--loss/--queue override one value):
#   lan   1 ms RTT, no rate limit, no loss
#   4g    100 ms RTT, 4 Mbit/s, 1 % loss (the default)
#   3g    300 ms RTT, 1 Mbit/s, 2 % loss
# The queue is 100 packets either way; loss applies to each direction.
#
# Servers (far namespace, 198.18.0.2, one port each, one backend:
# tlsfront_test_backend's /json/256, a 256-byte JSON body):
#   tlsfront        the defaults (+ a stapled OCSP response, response_file):
#                   TLS 1.2 + 1.3, ECDSA leaf + intermediate, session cache
#                   and tickets, h2, tcp_fastopen "auto" = 256 here (the
#                   sysctl allows it)
#   tlsfront-notfo  the same with tcp_fastopen = 0 (as on a kernel whose
#                   sysctl does not allow server TFO)
#   tlsfront-0rtt   the same with [tls] early_data = true; when
#                   `tlsfront --test` refuses that key its rows say "not built yet"
#   tlsfront-h3     tlsfront-0rtt's configuration with [[listen]] quic = true:
#                   HTTP/3 on UDP at the same address and port (TLS 1.3
#                   through GnuTLS, session tickets, early data), the TCP
#                   side as tlsfront-0rtt (it also serves the TCP cases)
#   nginx-after     the write-up's "after": TLS 1.2 + 1.3, ECDSA, shared cache,
#                   shared ticket key, stapling (ssl_stapling_file), h2,
#                   ssl_early_data on, listen ... fastopen=256, upstream keepalive
#   nginx-before    its "before": TLS 1.2 only, RSA leaf, the chain with the
#                   root, no session cache, no tickets, no stapling
#
# Cases (client: tlsfront_wan_client, one new connection per sample, an
# HTTP/1.1 GET asking for a staple; a returning client resumes with the
# session its previous connection got, after one unmeasured warm-up that
# also fetches the TFO cookie):
#   new          a new client: full handshake, no TFO
#   resumed      a returning client: session offered, no TFO
#   resumed-tfo  the same with TCP Fast Open (TCP_FASTOPEN_CONNECT)
#   0rtt         a returning client sending its GET as TLS 1.3 early data
#   0rtt-tfo     the same with TCP Fast Open
# Every outcome is checked per sample, never assumed: resumed
# (SSL_session_reused), early data accepted (SSL_get_early_data_status), the
# server acknowledged data in the SYN (TCPI_OPT_SYN_DATA).
#
# HTTP/3 cases (servers with QUIC only, i.e. tlsfront-h3; client: Debian's
# ngtcp2 client gtlsclient, package ngtcp2-client, through
# tests/tools/wan/gtlsclient_sample.py, its standard error buffered (its
# debug log's many small writes otherwise cost it 6 to 10 ms of a handshake
# on the 4g profile); one new QUIC connection per sample,
# one GET of the same body; a returning client resumes with the ticket
# (--session-file) and transport parameters (--tp-file) its previous
# connection got, after one unmeasured warm-up):
#   h3-new       a new client: full QUIC + TLS 1.3 handshake
#   h3-resumed   a returning client, early data off (--disable-early-data)
#   h3-0rtt      a returning client sending its GET in a 0-RTT packet
# Times come from the client's qlog (--qlog-dir; whole milliseconds) and
# count from its first packet, the counterpart of socket(): "connect" is
# the server's first packet (its Initial), "TLS done" the client's first
# Handshake packet with CRYPTO data (its Finished), TTFB the first packet
# with a STREAM frame of the request stream. Outcomes are read per sample
# from tlsfront's access log, the line(s) whose remote_port is the client's
# UDP port: status 200, ssl_session_reused, ssl_early_data; "0-RTT
# accepted" counts lines with ssl_early_data true. The floor: 1 RTT for
# the QUIC handshake (transport and TLS at once), +1 for the request unless
# it went as accepted early data (new 2, resumed 2, 0-RTT 1). A 0-RTT
# sample whose first datagram was lost is not accepted: gtlsclient resends
# only the Initial and the request after the handshake. Before measuring,
# one HTTP/3 request checks that the delay line carries QUIC's UDP.
#
# Burst cases (10 GETs on one new connection, all sent at once; figures
# are the first response byte and the completion time, the last response
# read; --burst N changes the 10; meant for the 3g profile, where loss
# stalls TCP's one byte stream and only the lost stream of QUIC):
#   burst-h3     HTTP/3 (servers with QUIC): gtlsclient with N URLs
#   burst-h2     HTTP/2 over TCP (servers with h2: all but nginx-before):
#                h2load -n N -c 1 -m N (nghttp2 writes the N requests in
#                one go; curl --parallel writes each in its own TLS record
#                and TCP segment, and its tenth reached the server a round
#                trip late, behind the client's congestion window), checked: N
#                succeeded, N 2xx, ALPN h2. Times from h2load: TTFB "time to
#                1st byte" from connect(), completion "finished in" (from its
#                start); "TLS done" is its "time for connect"
# Both are new clients (full handshake) with TFO and 0-RTT unused.
#
# Figures per row: medians and p90 of TCP connect, TLS done and TTFB (ms from
# the client's socket()), TTFB in round trips (median TTFB / RTT), the floor
# for what actually happened (median of the per-sample floors: 1 RTT for
# TCP unless the SYN carried the ClientHello, +1 for the TLS 1.3 handshake or a
# TLS 1.2 resumption, +2 for a full TLS 1.2 one, +1 for the request unless it
# went as accepted early data; so new 3, resumed 3, resumed + TFO 2, 0-RTT 2,
# 0-RTT + TFO 1 for TLS 1.3), and the counts of the checks. A second table:
# each server's first flight (TLS record bytes the client read before it
# sent its Finished, on a new connection: ServerHello .. Finished with the
# stapled OCSP response) against the initial congestion window, 10 segments
# of the connection's MSS; for QUIC (h3-new) the QUIC packet bytes before
# the client's Finished against 3 times what the client had sent, the
# anti-amplification limit of RFC 9000 §8.1. A third table: the burst
# cases (first byte, completion, completion in RTT, lost packets).
#
# Output: the tables on stdout, one JSON object per sample and per row in the
# results file (build/bench/bench-wan-<UTC time>.jsonl unless --out).
# The default run (4g: 6 servers x 5 TCP cases, tlsfront-h3 x 3 HTTP/3
# cases and burst-h3, 5 servers x burst-h2; 20 samples each) takes about 7
# minutes; 3g about 20 (trim with --servers or --cases).
#
# Environment: TLSFRONT_BIN (default build/tlsfront; build/ is built first
# unless it is set), BENCH_KEEP_TMP=1 keeps the temporary directory (every
# configuration, log and sample).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

# --- parameters ---------------------------------------------------------------
profile=4g
rtt="" rate="" loss="" queue=100
samples=20
seed=14
servers=(tlsfront tlsfront-notfo tlsfront-0rtt tlsfront-h3 nginx-after nginx-before)
cases=(new resumed resumed-tfo 0rtt 0rtt-tfo h3-new h3-resumed h3-0rtt burst-h3 burst-h2)
burst=10
out=""
body_path=/json/256
lifetime=1800         # the delay line's own limit, seconds: it never outlives a stuck run by much

usage() {
  sed -n '2,3p' "${BASH_SOURCE[0]}" | sed 's/^# /usage: /; s/^#  */    /' >&2
  exit 2
}

while (($#)); do
  case "$1" in
    --profile) profile=${2:?}; shift 2 ;;
    --rtt) rtt=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --loss) loss=${2:?}; shift 2 ;;
    --queue) queue=${2:?}; shift 2 ;;
    --samples) samples=${2:?}; shift 2 ;;
    --seed) seed=${2:?}; shift 2 ;;
    --servers) read -r -a servers <<<"${2:?}"; shift 2 ;;
    --cases) read -r -a cases <<<"${2:?}"; shift 2 ;;
    --burst) burst=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "bench-wan.sh: unknown argument $1" >&2; usage ;;
  esac
done
case "$profile" in
  lan) : "${rtt:=1}" "${rate:=0}" "${loss:=0}" ;;
  4g) : "${rtt:=100}" "${rate:=4000}" "${loss:=1}" ;;
  3g) : "${rtt:=300}" "${rate:=1000}" "${loss:=2}" ;;
  *) echo "bench-wan.sh: --profile is lan, 4g or 3g, not $profile" >&2; exit 2 ;;
esac
number='^[0-9]+([.][0-9]+)?$'
[[ $rtt =~ $number && $loss =~ $number && $rate =~ ^[0-9]+$ && $queue =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ ]] \
  || { echo "bench-wan.sh: --rtt/--loss are numbers, --rate/--queue/--seed integers" >&2; exit 2; }
[[ $samples =~ ^[1-9][0-9]*$ ]] || { echo "bench-wan.sh: --samples is a positive integer" >&2; exit 2; }
[[ $burst =~ ^[1-9][0-9]*$ ]] || { echo "bench-wan.sh: --burst is a positive integer" >&2; exit 2; }
for s in "${servers[@]}"; do
  [[ " tlsfront tlsfront-notfo tlsfront-0rtt tlsfront-h3 nginx-after nginx-before " == *" $s "* ]] \
    || { echo "bench-wan.sh: unknown server $s" >&2; exit 2; }
done
for c in "${cases[@]}"; do
  [[ " new resumed resumed-tfo 0rtt 0rtt-tfo h3-new h3-resumed h3-0rtt burst-h3 burst-h2 " == *" $c "* ]] \
    || { echo "bench-wan.sh: unknown case $c" >&2; exit 2; }
done

say() { printf '%s\n' "$*" >&2; }
die() { say "bench-wan: $*"; exit 1; }

((EUID == 0)) || die "needs root (network namespaces, TUN devices)"
[[ -c /dev/net/tun ]] || die "no /dev/net/tun"
for t in ip nginx openssl python3 sysctl timeout chrt gtlsclient h2load; do
  command -v "$t" >/dev/null 2>&1 || die "missing $t (run scripts/install-deps.sh)"
done

# --- processes and namespaces: all stopped and removed by the trap -----------
tmp=""
started=()
near=tlsfront-wan-near-$$
far=tlsfront-wan-far-$$
made_ns=()

stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  for ((i = 0; i < 50; i++)); do
    [[ $(ps -o stat= -p "$pid" 2>/dev/null) == Z* || -z $(ps -o pid= -p "$pid" 2>/dev/null) ]] && break
    sleep 0.1
  done
  ((i < 50)) || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317  # called from the traps
cleanup() {
  local status=$? pid ns
  trap - EXIT INT TERM
  ((status == 0)) || say "bench-wan: stopping after an error or a signal (status $status)"
  for pid in "${started[@]}"; do stop_pid "$pid"; done
  for ns in "${made_ns[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  if [[ -n "$tmp" ]]; then
    if [[ -n ${BENCH_KEEP_TMP:-} ]]; then say "bench-wan: kept $tmp"; else rm -rf "$tmp"; fi
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Namespaces left by a run that was killed (SIGKILL skips the trap): the
# name carries the run's PID.
for ns in $(ip netns list | awk '/^tlsfront-wan-(near|far)-[0-9]+/ { print $1 }'); do
  kill -0 "${ns##*-}" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
done

# start NAME NETNS CMD...: CMD in NETNS, output to $tmp/NAME.{out,err}.
start() {
  local name=$1 ns=$2
  shift 2
  ip netns exec "$ns" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null &
  started+=("$!")
}

# wait_for DESCRIPTION CMD...: until CMD succeeds (10 s).
wait_for() {
  local what=$1 i
  shift
  for ((i = 0; i < 100; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "$what did not come up"
}

# --- build, PKI, staple -------------------------------------------------------
tlsfront_bin=${TLSFRONT_BIN:-$repo/build/tlsfront}
tools=$repo/build/tests
if [[ -z ${TLSFRONT_BIN:-} || ! -x $tools/tlsfront_wan_client ]]; then
  say "bench-wan: building tlsfront and the bench tools (Release) in build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build --target tlsfront tlsfront_test_backend tlsfront_delay_line tlsfront_wan_client >/dev/null
fi
[[ -x $tlsfront_bin ]] || die "$tlsfront_bin is not executable"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsfront-bench-wan.XXXXXX")
[[ -n $out ]] || { mkdir -p build/bench; out=build/bench/bench-wan-$(date -u +%Y%m%dT%H%M%SZ).jsonl; }
: >"$out"
pki=$tmp/pki
scripts/gen-test-pki.sh "$pki" >/dev/null 2>&1 || die "scripts/gen-test-pki.sh failed"
cat "$pki/rsa.chain.pem" "$pki/root.pem" >"$pki/rsa.fullchain-with-root.pem"
# A good OCSP response for localhost.pem, valid for a day, signed by the
# intermediate's delegated responder: no network needed.
openssl ocsp -issuer "$pki/intermediate.pem" -cert "$pki/localhost.pem" -no_nonce -reqout "$tmp/ocsp-req.der" \
  >/dev/null 2>&1 || die "openssl ocsp (request) failed"
openssl ocsp -index "$pki/ocsp-index.txt" -rsigner "$pki/ocsp-signer.pem" -rkey "$pki/ocsp-signer.key" \
  -CA "$pki/intermediate.pem" -reqin "$tmp/ocsp-req.der" -respout "$pki/localhost.ocsp.der" -ndays 1 \
  >/dev/null 2>&1 || die "openssl ocsp (response) failed"

# --- the link -----------------------------------------------------------------
ip netns add "$near" && made_ns+=("$near")
ip netns add "$far" && made_ns+=("$far")
half_rtt=$(awk -v r="$rtt" 'BEGIN { printf "%.3f", r / 2 }')
# Real-time priority for the delay line (it sleeps in ppoll between packets):
# on a busy machine a normal process would wake late and stretch the link.
rt=()
chrt -f 10 true 2>/dev/null && rt=(chrt -f 10)
start delay_line "$near" "${rt[@]}" "$tools/tlsfront_delay_line" --dev-a wan-near --dev-b wan-far --lifetime "$lifetime" \
  --delay-ab-ms "$half_rtt" --delay-ba-ms "$half_rtt" --rate-kbit "$rate" --queue "$queue" --loss "$loss" \
  --seed "$seed" --ready-file "$tmp/delay_line.ready" --stats-file "$tmp/delay_line.stats"
delay_line_pid=${started[-1]}
wait_for "the delay line" test -e "$tmp/delay_line.ready"
ip -n "$near" link set dev wan-far netns "$far"
ip -n "$near" addr add 198.18.0.1 peer 198.18.0.2 dev wan-near
ip -n "$far" addr add 198.18.0.2 peer 198.18.0.1 dev wan-far
for ns in "$near" "$far"; do ip -n "$ns" link set lo up; done
ip -n "$near" link set wan-near up
ip -n "$far" link set wan-far up
ip netns exec "$near" sysctl -qw net.ipv4.tcp_fastopen=1
ip netns exec "$far" sysctl -qw net.ipv4.tcp_fastopen=3

# --- servers ------------------------------------------------------------------
backend_port=8080
declare -A port=([tlsfront]=8443 [tlsfront-notfo]=8444 [tlsfront-0rtt]=8445 [nginx-after]=8446 [nginx-before]=8447
                 [tlsfront-h3]=8448)
declare -A not_built=()
start backend "$far" "$tools/tlsfront_test_backend" --listen "127.0.0.1:$backend_port"

# tlsfront_conf NAME EXTRA_LISTEN EXTRA_TLS: the defaults plus a staple.
tlsfront_conf() {
  local name=$1 listen_extra=$2 tls_extra=$3
  cat >"$tmp/$name.toml" <<EOF
[[listen]]
address = "198.18.0.2:${port[$name]}"
$listen_extra
[tls]
certificate = "$pki/localhost.chain.pem"
key = "$pki/localhost.key"
trusted_ca = "$pki/root.pem"  # the private root: only to check the chain, never sent
$tls_extra
[tls.ocsp]
response_file = "$pki/localhost.ocsp.der"
[[upstream]]
name = "backend"
servers = ["127.0.0.1:$backend_port"]
[[route]]
path_prefix = "/"
upstream = "backend"
[log]
access_log = "$tmp/$name.access.log"
level = "warn"
[admin]
enabled = false
EOF
}

nginx_main() {
  local name=$1
  cat <<EOF
user root;
worker_processes 1;
daemon off;
pid $tmp/$name.pid;
error_log $tmp/$name.error.log warn;
events { worker_connections 1024; }
EOF
}

nginx_http_common() {
  local name=$1 t
  for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $tmp/$name.${t}_temp;"; done
  cat <<EOF
  access_log $tmp/$name.access.log;
  keepalive_timeout 75s;
EOF
}

nginx_after_conf() {
  cat >"$tmp/nginx-after.conf" <<EOF
$(nginx_main nginx-after)
http {
$(nginx_http_common nginx-after)
  upstream backend { server 127.0.0.1:$backend_port; keepalive 32; }
  server {
    listen 198.18.0.2:${port[nginx-after]} ssl http2 fastopen=256;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate $pki/localhost.chain.pem;
    ssl_certificate_key $pki/localhost.key;
    ssl_session_cache shared:SSL:10m;
    ssl_session_timeout 1d;
    ssl_session_tickets on;
    ssl_session_ticket_key $pki/ticket-key-80.key;
    ssl_stapling on;
    ssl_stapling_file $pki/localhost.ocsp.der;
    ssl_early_data on;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Early-Data \$ssl_early_data;
    }
  }
}
EOF
}

nginx_before_conf() {
  cat >"$tmp/nginx-before.conf" <<EOF
$(nginx_main nginx-before)
http {
$(nginx_http_common nginx-before)
  server {
    listen 198.18.0.2:${port[nginx-before]} ssl;
    ssl_protocols TLSv1.2;
    ssl_certificate $pki/rsa.fullchain-with-root.pem;
    ssl_certificate_key $pki/rsa.key;
    ssl_session_cache off;
    ssl_session_tickets off;
    location / { proxy_pass http://127.0.0.1:$backend_port; }
  }
}
EOF
}

start_server() {
  local name=$1
  case "$name" in
    tlsfront) tlsfront_conf "$name" "" "" ;;
    tlsfront-notfo) tlsfront_conf "$name" "tcp_fastopen = 0" "" ;;
    tlsfront-0rtt) tlsfront_conf "$name" "" "early_data = true" ;;
    tlsfront-h3) tlsfront_conf "$name" "quic = true" "early_data = true" ;;
    nginx-after) nginx_after_conf ;;
    nginx-before) nginx_before_conf ;;
  esac
  case "$name" in
    tlsfront*)
      if ! "$tlsfront_bin" --test --config "$tmp/$name.toml" >"$tmp/$name.test" 2>&1; then
        [[ $name == tlsfront-0rtt || $name == tlsfront-h3 ]] \
          || die "tlsfront --test refused $tmp/$name.toml: $(cat "$tmp/$name.test")"
        say "bench-wan: $tlsfront_bin refuses $name's configuration: its rows say \"not built yet\" ($(tail -1 "$tmp/$name.test"))"
        not_built[$name]=1
        return 0
      fi
      start "$name" "$far" "$tlsfront_bin" --config "$tmp/$name.toml" ;;
    nginx*)
      ip netns exec "$far" nginx -t -q -c "$tmp/$name.conf" -e "$tmp/$name.error.log" >/dev/null 2>&1 \
        || die "nginx -t refused $tmp/$name.conf: $(ip netns exec "$far" nginx -t -c "$tmp/$name.conf" -e /dev/stderr 2>&1 | tail -3)"
      start "$name" "$far" nginx -c "$tmp/$name.conf" -e "$tmp/$name.error.log" ;;
  esac
}

for s in "${servers[@]}"; do start_server "$s"; done
wait_for backend ip netns exec "$far" bash -c "exec 3<>/dev/tcp/127.0.0.1/$backend_port"
for s in "${servers[@]}"; do
  [[ -n ${not_built[$s]:-} ]] && continue
  wait_for "$s" ip netns exec "$far" bash -c "exec 3<>/dev/tcp/198.18.0.2/${port[$s]}"
done

# --- samples -------------------------------------------------------------------
# serves SERVER CASE: whether SERVER speaks what CASE asks for (QUIC for h3-*
# and burst-h3, h2 over TCP for burst-h2; every server speaks the TCP cases).
serves() {
  case "$2" in
    h3-*|burst-h3) [[ $1 == tlsfront-h3 ]] ;;
    burst-h2) [[ $1 != nginx-before ]] ;;
    *) true ;;
  esac
}

# h3_client SERVER CASE: one HTTP/3 connection from near (gtlsclient); its
# JSON line on stdout; the client's qlog and output in $tmp/h3/SERVER.CASE.N.
h3_client() {
  local server=$1 case=$2 args=() n=1 work
  mkdir -p "$tmp/h3"
  work=$tmp/h3/$server.$case.$(find "$tmp/h3" -mindepth 1 -maxdepth 1 | wc -l)  # runs in a subshell: no counter
  mkdir -p "$work"
  args=(--host 198.18.0.2 --port "${port[$server]}" --sni localhost --access-log "$tmp/$server.access.log"
        --work "$work" --path "$body_path" --timeout 30)
  case "$case" in
    h3-resumed) args+=(--session "$tmp/$server.$case.session" --tp "$tmp/$server.$case.tp" --no-early-data) ;;
    h3-0rtt) args+=(--session "$tmp/$server.$case.session" --tp "$tmp/$server.$case.tp") ;;
    burst-h3) n=$burst ;;
  esac
  ip netns exec "$near" timeout 80 python3 "$repo/tests/tools/wan/gtlsclient_sample.py" "${args[@]}" --requests "$n" \
    2>>"$tmp/client.err"
}

# h2_burst SERVER: one HTTP/2 connection from near (h2load -c 1 -m N: all N
# GETs at once, written together); its JSON line on stdout.
h2_burst() {
  local server=$1
  ip netns exec "$near" timeout 40 h2load -n "$burst" -c 1 -m "$burst" -T 30 -N 30 \
    --connect-to "198.18.0.2:${port[$server]}" "https://localhost:${port[$server]}$body_path" \
    2>>"$tmp/client.err" | tee -a "$tmp/h2load.out" | python3 -c '
import json, re, sys
n = int(sys.argv[1])
text = sys.stdin.read()
unit = {"us": 0.001, "ms": 1.0, "s": 1000.0}
def num(pattern):
    m = re.search(pattern, text, re.M)
    return None if not m else float(m[1]) * unit[m[2]]
def count(pattern):
    m = re.search(pattern, text, re.M)
    return int(m[1]) if m else 0
r = {"client": "h2load", "transport": "tcp", "protocol": "h2", "requests": n, "tfo_syn_data_acked": False,
     "tcp_retrans": None, "resumed": False, "early_data": "not_sent", "connect_ms": None,
     "tls_ms": num(r"^time for connect:\s+([0-9.]+)(us|ms|s)\b"),
     "ttfb_ms": num(r"^time to 1st byte:\s+([0-9.]+)(us|ms|s)\b"),
     "complete_ms": num(r"^finished in ([0-9.]+)(us|ms|s),"),
     "succeeded": count(r"(\d+) succeeded"), "status_2xx": count(r"^status codes: (\d+) 2xx"),
     "alpn": (re.search(r"^Application protocol: (\S+)", text, re.M) or [None, None])[1]}
r["ok"] = (r["succeeded"] == n and r["status_2xx"] == n and r["alpn"] == "h2"
           and None not in (r["tls_ms"], r["ttfb_ms"], r["complete_ms"]))
print(json.dumps(r))
' "$burst"
}

# client SERVER CASE KIND: one connection from near; its JSON line, tagged, to
# the results file (KIND "sample") or nowhere ("warmup").
client() {
  local server=$1 case=$2 kind=$3 args=() line rc=0
  case "$case" in
    h3-*|burst-h3) line=$(h3_client "$server" "$case") || rc=$? ;;
    burst-h2) line=$(h2_burst "$server") || rc=$? ;;
    *) tcp_client ;;
  esac
  [[ $line == \{* ]] || line="{\"ok\":false,\"error\":\"no output, exit status $rc (see client.err)\"}"
  [[ $kind == sample ]] || return 0
  printf '{"kind":"sample","profile":"%s","rtt_ms":%s,"server":"%s","case":"%s",%s\n' \
    "$profile" "$rtt" "$server" "$case" "${line#\{}" >>"$out"
}

# tcp_client: client()'s TCP cases (tlsfront_wan_client); sets line and rc.
tcp_client() {
  args=(--connect "198.18.0.2:${port[$server]}" --host localhost --ca "$pki/root.pem" --path "$body_path" --status
        --timeout-ms 30000)
  [[ $case == new ]] || args+=(--sess-in "$tmp/$server.$case.session" --sess-out "$tmp/$server.$case.session")
  [[ $case == *tfo ]] && args+=(--tfo)
  [[ $case == 0rtt* ]] && args+=(--early-data)
  line=$(ip netns exec "$near" timeout 40 "$tools/tlsfront_wan_client" "${args[@]}" 2>>"$tmp/client.err") || rc=$?
}

# The delay line carries IP packets: check that QUIC's UDP gets through it
# (one HTTP/3 request) before measuring.
if [[ " ${servers[*]} " == *" tlsfront-h3 "* && -z ${not_built[tlsfront-h3]:-} ]]; then
  probe=$(h3_client tlsfront-h3 h3-new) || true
  [[ $probe == *'"ok": true'* ]] || die "no HTTP/3 answer from tlsfront-h3 over the delay line (UDP): $probe"
fi

t0=$SECONDS
say "bench-wan: profile $profile (RTT ${rtt} ms, ${rate} kbit/s, ${loss} % loss, queue $queue), ${#servers[@]} servers x ${#cases[@]} cases x $samples samples; results in $out"
for c in "${cases[@]}"; do
  for s in "${servers[@]}"; do
    [[ -n ${not_built[$s]:-} ]] && continue
    serves "$s" "$c" || continue
    rm -f "$tmp/$s.$c.session" "$tmp/$s.$c.tp"
    [[ $c == new || $c == h3-new || $c == burst-* ]] || client "$s" "$c" warmup
    for ((i = 0; i < samples; i++)); do client "$s" "$c" sample; done
  done
  say "bench-wan: case $c done ($((SECONDS - t0)) s)"
done

stop_pid "$delay_line_pid"   # it writes its counts as it exits

# --- summary --------------------------------------------------------------------
not_built_list=""
for s in "${!not_built[@]}"; do not_built_list+="$s "; done
python3 - "$out" "$rtt" "$profile" "$rate" "$loss" "${servers[*]}" "${cases[*]}" "$not_built_list" <<'PY'
import json, sys

out, rtt, profile, rate, loss = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
servers, cases, not_built = sys.argv[6].split(), sys.argv[7].split(), set(sys.argv[8].split())
samples = [json.loads(l) for l in open(out) if l.strip()]

def pct(xs, p):
    """Nearest-rank percentile; None for no data."""
    xs = sorted(xs)
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(round(p / 100 * len(xs) + 0.5)) - 1))
    return xs[k]

def serves(sv, c):
    """The shell's serves(): QUIC only on tlsfront-h3, h2 everywhere but nginx-before."""
    if c.startswith("h3-") or c == "burst-h3":
        return sv == "tlsfront-h3"
    return sv != "nginx-before" if c == "burst-h2" else True

def floor_rtts(s):
    """Round trips a perfect network stack needs for what this sample did."""
    if s.get("transport") == "quic":  # one round trip for QUIC and TLS together
        return 1 + (0 if s["early_data"] == "accepted" else 1)
    tls = 2 if (s["protocol"] == "TLSv1.2" and not s["resumed"]) else 1
    tcp = 0 if s["tfo_syn_data_acked"] else 1  # the ClientHello rode in the SYN: TCP's round trip is TLS's first
    return tcp + tls + (0 if s["early_data"] == "accepted" else 1)

def fmt(v, d=0 if rtt >= 20 else 1):  # whole milliseconds unless the RTT is a few of them
    return "—" if v is None else f"{v:.{d}f}"

rows = []
print(f"\n### bench-wan: profile {profile}, RTT {rtt:g} ms, {rate} kbit/s, {loss} % loss\n")
print("| case | server | ok | connect ms p50 / p90 | TLS done ms p50 / p90 | TTFB ms p50 / p90 | TTFB in RTT | floor RTT | resumed | 0-RTT accepted | TFO SYN data |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for c in cases:
    if c.startswith("burst-"):
        continue
    for sv in servers:
        if not serves(sv, c):
            continue
        if sv in not_built:
            print(f"| {c} | {sv} | not built yet | | | | | | | | |")
            rows.append({"kind": "row", "case": c, "server": sv, "not_built": True})
            continue
        mine = [s for s in samples if s["server"] == sv and s["case"] == c]
        ok = [s for s in mine if s.get("ok")]
        if not ok:
            print(f"| {c} | {sv} | 0/{len(mine)} | | | | | | | | |")
            continue
        col = lambda k: [s[k] for s in ok]
        r = {"kind": "row", "profile": profile, "rtt_ms": rtt, "case": c, "server": sv, "ok": len(ok), "n": len(mine)}
        for k in ("connect_ms", "tls_ms", "ttfb_ms"):
            r[k + "_p50"], r[k + "_p90"] = pct(col(k), 50), pct(col(k), 90)
        r["ttfb_rtt"] = r["ttfb_ms_p50"] / rtt
        r["floor_rtt"] = pct([floor_rtts(s) for s in ok], 50)
        r["resumed"] = sum(s["resumed"] for s in ok)
        r["early_accepted"] = sum(s["early_data"] == "accepted" for s in ok)
        r["tfo_syn_data"] = sum(s["tfo_syn_data_acked"] for s in ok)
        r["protocol"] = pct(col("protocol"), 50)
        r["retrans"] = sum(s["tcp_retrans"] for s in ok)
        quic = c.startswith("h3-")
        rows.append(r)
        n = len(ok)
        tfo = "—" if quic else f"{r['tfo_syn_data']}/{n}"
        print(f"| {c} | {sv} | {n}/{len(mine)} | {fmt(r['connect_ms_p50'])} / {fmt(r['connect_ms_p90'])} "
              f"| {fmt(r['tls_ms_p50'])} / {fmt(r['tls_ms_p90'])} | {fmt(r['ttfb_ms_p50'])} / {fmt(r['ttfb_ms_p90'])} "
              f"| {r['ttfb_rtt']:.2f} | {r['floor_rtt']} | {r['resumed']}/{n} | {r['early_accepted']}/{n} | {tfo} |")

print("\nFirst flight of a new connection (TLS record bytes read before the client's Finished):\n")
print("| server | protocol | bytes p50 | stapled OCSP bytes | MSS | segments | fits 10-segment initial cwnd |")
print("|---|---|---|---|---|---|---|")
for sv in servers:
    ok = [s for s in samples if s["server"] == sv and s["case"] == "new" and s.get("ok")]
    if not ok:
        continue
    b = pct([s["server_flight_bytes"] for s in ok], 50)
    mss = pct([s["mss"] for s in ok], 50)
    ocsp = pct([s["ocsp_bytes"] for s in ok], 50)
    segs = -(-b // mss) if mss else None
    fits = segs is not None and segs <= 10
    rows.append({"kind": "first_flight", "server": sv, "protocol": ok[0]["protocol"], "bytes": b, "ocsp_bytes": ocsp,
                 "mss": mss, "segments": segs, "fits_initcwnd": fits})
    print(f"| {sv} | {ok[0]['protocol']} | {b} | {ocsp} | {mss} | {segs} | {'yes' if fits else 'no'} |")

h3new = [s for s in samples if s["case"] == "h3-new" and s.get("ok")]
if h3new:
    print("\nFirst flight of a new QUIC connection (QUIC packet bytes received before the client's Finished) against "
          "the anti-amplification limit (3 x the bytes the client had sent, RFC 9000 §8.1):\n")
    print("| server | bytes p50 / max | client bytes before | limit | within the limit |")
    print("|---|---|---|---|---|")
    for sv in servers:
        ok = [s for s in h3new if s["server"] == sv]
        if not ok:
            continue
        b, bmax = pct([s["server_flight_bytes"] for s in ok], 50), max(s["server_flight_bytes"] for s in ok)
        cb = pct([s["client_bytes_before"] for s in ok], 50)
        within = sum(s["server_flight_bytes"] <= 3 * s["client_bytes_before"] for s in ok)
        rows.append({"kind": "first_flight_quic", "server": sv, "bytes": b, "bytes_max": bmax, "client_bytes": cb,
                     "limit": 3 * cb, "within_limit": within, "n": len(ok)})
        print(f"| {sv} | {b} / {bmax} | {cb} | {3 * cb} | {within}/{len(ok)} |")

bursts = [c for c in cases if c.startswith("burst-")]
if bursts:
    print(f"\nBursts: requests at once on one new connection (burst-h3: HTTP/3, gtlsclient; burst-h2: HTTP/2 over "
          f"TCP, h2load); ms, first response byte and the last response read:\n")
    print("| case | server | ok | requests | TTFB ms p50 / p90 | complete ms p50 / p90 | complete in RTT p50 / p90 "
          "| QUIC packets the client declared lost |")
    print("|---|---|---|---|---|---|---|---|")
    for c in bursts:
        for sv in servers:
            if not serves(sv, c) or sv in not_built:
                continue
            mine = [s for s in samples if s["server"] == sv and s["case"] == c]
            ok = [s for s in mine if s.get("ok")]
            if not ok:
                print(f"| {c} | {sv} | 0/{len(mine)} | | | | | |")
                continue
            r = {"kind": "burst", "profile": profile, "rtt_ms": rtt, "case": c, "server": sv, "ok": len(ok),
                 "n": len(mine), "requests": ok[0]["requests"]}
            for k in ("ttfb_ms", "complete_ms"):
                r[k + "_p50"], r[k + "_p90"] = pct([s[k] for s in ok], 50), pct([s[k] for s in ok], 90)
            lost = "—" if c == "burst-h2" else str(sum(s.get("lost_packets", 0) for s in ok))
            rows.append(r)
            print(f"| {c} | {sv} | {len(ok)}/{len(mine)} | {r['requests']} | {fmt(r['ttfb_ms_p50'])} / "
                  f"{fmt(r['ttfb_ms_p90'])} | {fmt(r['complete_ms_p50'])} / {fmt(r['complete_ms_p90'])} "
                  f"| {r['complete_ms_p50'] / rtt:.2f} / {r['complete_ms_p90'] / rtt:.2f} | {lost} |")

# Beside the write-up's nginx before -> after figures (its mini-program API on
# mobile networks): TLS handshake 0.68 s -> 0.28 s, TTFB 1.2 s -> 0.44 s,
# session reuse 0 -> ~75 %.
def row(sv, c):
    return next((r for r in rows if r.get("kind") == "row" and r["server"] == sv and r["case"] == c
                 and not r.get("not_built")), None)

def handshake_ms(sv, c):
    ok = [s for s in samples if s["server"] == sv and s["case"] == c and s.get("ok")]
    return pct([s["tls_ms"] - s["connect_ms"] for s in ok], 50)

def best_returning(sv):
    rs = [r for r in (row(sv, c) for c in ("resumed", "resumed-tfo", "0rtt", "0rtt-tfo")) if r]
    return min(rs, key=lambda r: r["ttfb_ms_p50"]) if rs else None

before = row("nginx-before", "new")
columns = [("nginx-before, new", before)]
for sv in ("tlsfront", "tlsfront-0rtt", "nginx-after"):
    if row(sv, "new"):
        columns.append((f"{sv}, new", row(sv, "new")))
    b = best_returning(sv)
    if b:
        columns.append((f"{sv}, returning ({b['case']})", b))
if before and len(columns) > 1:
    print("\nBeside the write-up (nginx before -> after: TLS handshake 680 -> 280 ms, TTFB 1200 -> 440 ms = 2.7x, "
          "session reuse 0 -> ~75 %); medians, TLS handshake = TLS done - TCP connected:\n")
    print("| | " + " | ".join(name for name, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    print("| TLS handshake ms | " + " | ".join(fmt(handshake_ms(r["server"], r["case"])) for _, r in columns) + " |")
    print("| TTFB ms | " + " | ".join(fmt(r["ttfb_ms_p50"]) for _, r in columns) + " |")
    print("| before / this TTFB | " + " | ".join(f"{before['ttfb_ms_p50'] / r['ttfb_ms_p50']:.2f}x" for _, r in columns)
          + " |")
    reuse = [row(r["server"], "resumed") for _, r in columns]
    print("| session reuse (resumed case) | " + " | ".join(
        "—" if not u else f"{100 * u['resumed'] / u['ok']:.0f} %" for u in reuse) + " |")
    rows.append({"kind": "writeup", "columns": [
        {"name": name, "server": r["server"], "case": r["case"], "ttfb_ms_p50": r["ttfb_ms_p50"],
         "handshake_ms_p50": handshake_ms(r["server"], r["case"]),
         "before_over_this_ttfb": before["ttfb_ms_p50"] / r["ttfb_ms_p50"]} for name, r in columns]})

with open(out, "a") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
say "bench-wan: delay line: $(cat "$tmp/delay_line.stats" 2>/dev/null || echo 'no counts')"
say "bench-wan: finished in $((SECONDS - t0)) s; samples and rows in $out"
