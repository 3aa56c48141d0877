#!/usr/bin/env bash
# h3-cpu.sh [--bin PATH] [--rounds N] [--conns N] [--requests N] [--h2-requests N] [--strace]
#
# CPU time tlsfront spends per HTTP/3 request and per HTTP/2 request, on
# loopback, one worker, a static route serving a 256-byte file (no access
# log). Each round runs, against one tlsfront:
#   h3      --conns gtlsclient connections with --requests URLs each
#   h3-1    --conns gtlsclient connections with one URL each (the handshakes)
#   h2      h2load -n --h2-requests -c 1 -m 10 over TLS
# and reads tlsfront's user + system time from /proc/PID/stat before and
# after each. HTTP/3 per request = (h3 - h3-1) / (conns * (requests - 1));
# per handshake = h3-1 / conns; HTTP/2 per request = h2 / h2-requests.
# The rounds interleave; the medians are printed at the end. Also printed
# per HTTP/3 request: datagrams each way and the worker's sendmsg calls,
# from tlsfront's metrics (tlsfront_quic_datagrams_*), when it has them.
# --strace: one more h3 run under `strace -c -f` (system calls by name).
#
# Everything started here (tlsfront, the clients) is stopped by PID on exit.
# Needs gtlsclient (package ngtcp2-client), h2load (nghttp2-client),
# openssl, curl, python3.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$repo/build/tlsfront
rounds=3
conns=50
requests=100
h2_requests=20000
do_strace=0
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --h2-requests) h2_requests=$2; shift 2 ;;
    --strace) do_strace=1; shift ;;
    *) echo "h3-cpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for t in gtlsclient h2load openssl curl python3; do
  command -v "$t" >/dev/null || { echo "h3-cpu.sh: $t is missing" >&2; exit 1; }
done
[[ -x $bin ]] || { echo "h3-cpu.sh: $bin is not executable" >&2; exit 1; }
((requests >= 2)) || { echo "h3-cpu.sh: --requests must be at least 2" >&2; exit 2; }

tmp=$(mktemp -d /tmp/h3-cpu.XXXXXX)
pid=
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  [[ -n ${H3CPU_KEEP:-} ]] || rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

pki=$repo/build/test-pki  # the test PKI the build generates; else a fresh one
if [[ ! -f $pki/localhost.chain.pem ]]; then
  pki=$tmp/pki
  "$repo/scripts/gen-test-pki.sh" "$pki" >/dev/null 2>&1
fi
mkdir -p "$tmp/www"
head -c 256 /dev/zero | tr '\0' 'a' >"$tmp/www/f256"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
admin=$(free_port)
cat >"$tmp/tlsfront.toml" <<EOF
workers = 1
[[listen]]
address = "127.0.0.1:$port"
quic = true
[tls]
certificate = "$pki/localhost.chain.pem"
key = "$pki/localhost.key"
trusted_ca = "$pki/root.pem"
[[upstream]]
name = "unused"
servers = ["127.0.0.1:9"]
[[route]]
path_prefix = "/"
root = "$tmp/www"
[limits]
keepalive_requests = 100000000  # h2load's requests on its one connection
[log]
level = "warn"
[admin]
address = "127.0.0.1:$admin"
EOF
"$bin" --config "$tmp/tlsfront.toml" >"$tmp/tlsfront.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -sk -o /dev/null "https://127.0.0.1:$port/f256" && break
  sleep 0.1
done
curl -skf -o /dev/null "https://127.0.0.1:$port/f256" || { cat "$tmp/tlsfront.out" >&2; exit 1; }

cpu_ms() {  # tlsfront's CPU time (user + system), in ms: its threads' run time in ns
  # (/proc/PID/task/*/schedstat; /proc/PID/stat's utime + stime are the
  # same time in clock ticks, too coarse for a run this short)
  cat /proc/"$pid"/task/*/schedstat | awk '{ s += $1 } END { printf "%.3f", s / 1e6 }'
}
ticks=$(getconf CLK_TCK)
user_sys() {  # "user system" ms from /proc/PID/stat (clock ticks)
  awk -v t="$ticks" '{ sub(/^.*\) /, ""); print $12 * 1000 / t, $13 * 1000 / t }' "/proc/$pid/stat"
}
metric() {  # a counter from /metrics (0 when absent)
  curl -s "http://127.0.0.1:$admin/metrics" | awk -v m="$1" '$1 == m { print $2; f = 1 } END { if (!f) print 0 }'
}
url=https://127.0.0.1:$port/f256
urls() { local n=$1; for ((i = 0; i < n; i++)); do printf '%s ' "$url"; done; }
h3_conns() {  # N URLs per connection, --conns connections one after another
  local n=$1 u
  u=$(urls "$n")
  for ((c = 0; c < conns; c++)); do
    # shellcheck disable=SC2086
    timeout 20 gtlsclient --exit-on-all-streams-close --no-quic-dump --no-http-dump -q 127.0.0.1 "$port" $u \
      >/dev/null 2>"$tmp/gtlsclient.err" || { echo "h3-cpu.sh: gtlsclient failed:" >&2; tail -5 "$tmp/gtlsclient.err" >&2; exit 1; }
  done
}
h2() {
  h2load -n "$h2_requests" -c 1 -m 10 "$url" >"$tmp/h2load.out" || { cat "$tmp/h2load.out" >&2; exit 1; }
  grep -q "^requests: $h2_requests total, $h2_requests started, $h2_requests done, $h2_requests succeeded" \
    "$tmp/h2load.out" || { echo "h3-cpu.sh: h2load:" >&2; grep "^requests:" "$tmp/h2load.out" >&2; exit 1; }
}
measure() {  # prints the CPU ms of the command
  local before after
  before=$(cpu_ms)
  "$@"
  after=$(cpu_ms)
  awk -v a="$after" -v b="$before" 'BEGIN { printf "%.3f", a - b }'
}

h3_conns 2  # warm-up
h2load -n 200 -c 1 -m 10 "$url" >/dev/null
declare -a r_h3 r_hs r_h2 r_dgin r_dgout r_sends r_h3u r_h3s r_h2u r_h2s
for ((r = 1; r <= rounds; r++)); do
  in0=$(metric tlsfront_quic_datagrams_received_total)
  out0=$(metric tlsfront_quic_datagrams_sent_total)
  s0=$(metric tlsfront_quic_send_calls_total)
  read -r u0 y0 < <(user_sys)
  a=$(measure h3_conns "$requests")
  read -r u1 y1 < <(user_sys)
  in1=$(metric tlsfront_quic_datagrams_received_total)
  out1=$(metric tlsfront_quic_datagrams_sent_total)
  s1=$(metric tlsfront_quic_send_calls_total)
  b=$(measure h3_conns 1)
  read -r u2 y2 < <(user_sys)
  in2=$(metric tlsfront_quic_datagrams_received_total)
  out2=$(metric tlsfront_quic_datagrams_sent_total)
  s2=$(metric tlsfront_quic_send_calls_total)
  c=$(measure h2)
  read -r u3 y3 < <(user_sys)
  n=$((conns * (requests - 1)))
  # per request: what the many-URL run cost beyond the one-URL run
  r_h3+=("$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.2f", (a - b) * 1000 / n }')")
  r_hs+=("$(awk -v b="$b" -v n="$conns" 'BEGIN { printf "%.3f", b / n }')")
  r_h2+=("$(awk -v c="$c" -v n="$h2_requests" 'BEGIN { printf "%.2f", c * 1000 / n }')")
  per() { awk -v x0="$1" -v x1="$2" -v y0="$3" -v y1="$4" -v n="$n" 'BEGIN { printf "%.2f", ((x1 - x0) - (y1 - y0)) / n }'; }
  r_dgin+=("$(per "$in0" "$in1" "$in1" "$in2")")
  r_dgout+=("$(per "$out0" "$out1" "$out1" "$out2")")
  r_sends+=("$(per "$s0" "$s1" "$s1" "$s2")")
  # user / system split (clock ticks: coarse)
  r_h3u+=("$(awk -v a="$u0" -v b="$u1" -v c="$u2" -v n="$n" 'BEGIN { printf "%.2f", ((b - a) - (c - b)) * 1000 / n }')")
  r_h3s+=("$(awk -v a="$y0" -v b="$y1" -v c="$y2" -v n="$n" 'BEGIN { printf "%.2f", ((b - a) - (c - b)) * 1000 / n }')")
  r_h2u+=("$(awk -v a="$u2" -v b="$u3" -v n="$h2_requests" 'BEGIN { printf "%.2f", (b - a) * 1000 / n }')")
  r_h2s+=("$(awk -v a="$y2" -v b="$y3" -v n="$h2_requests" 'BEGIN { printf "%.2f", (b - a) * 1000 / n }')")
  printf 'round %d: h3 %s µs/request (h3 %s ms, h3-1 %s ms), handshake %s ms, h2 %s µs/request (%s ms); per h3 request: datagrams in %s, out %s, send calls %s\n' \
    "$r" "${r_h3[-1]}" "$a" "$b" "${r_hs[-1]}" "${r_h2[-1]}" "$c" "${r_dgin[-1]}" "${r_dgout[-1]}" "${r_sends[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median of $rounds: h3 $(median "${r_h3[@]}") µs/request, h2 $(median "${r_h2[@]}") µs/request," \
  "handshake $(median "${r_hs[@]}") ms; per h3 request: datagrams in $(median "${r_dgin[@]}")," \
  "out $(median "${r_dgout[@]}"), send calls $(median "${r_sends[@]}")"
echo "user / system µs per request (clock ticks): h3 $(median "${r_h3u[@]}") / $(median "${r_h3s[@]}")," \
  "h2 $(median "${r_h2u[@]}") / $(median "${r_h2s[@]}")"

if ((do_strace)); then
  command -v strace >/dev/null || { echo "h3-cpu.sh: strace is missing" >&2; exit 1; }
  strace -c -f -p "$pid" -o "$tmp/strace.txt" &
  spid=$!
  sleep 1
  h3_conns "$requests"
  kill -INT "$spid"
  wait "$spid" || true
  echo "system calls of tlsfront during $conns connections x $requests requests (h3, strace -c -f):"
  cat "$tmp/strace.txt"
fi
