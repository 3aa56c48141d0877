#!/usr/bin/env bash
# h3-cpu.sh [--bin PATH]... [--rounds N] [--conns N] [--requests N] [--h2-requests N] [--strace]
#
# CPU time tlsfront spends per HTTP/3 request and per HTTP/2 request, on
# loopback, one worker, a static route serving a 256-byte file (no access
# log). Each round runs, against each tlsfront (one per --bin, default
# build/tlsfront; several are measured in turn within every round, so an
# A/B shares the host's load):
#   h3      --conns gtlsclient connections with --requests URLs each
#   h3-1    --conns gtlsclient connections with one URL each (the handshakes)
#   h2      h2load -n --h2-requests -c 1 -m 10 over TLS
# and reads tlsfront's CPU time (user + system: the sum of its threads' run
# time in /proc/PID/task/*/schedstat, in ns; /proc/PID/stat has the same in
# clock ticks, too coarse here) before and after each. HTTP/3 per request =
# (h3 - h3-1) / (conns * (requests - 1)); per handshake = h3-1 / conns;
# HTTP/2 per request = h2 / h2-requests. Also per HTTP/3 request: datagrams
# each way and the sendmsg calls that sent them, from tlsfront's metrics
# (tlsfront_quic_datagrams_*, tlsfront_quic_send_calls_total). The medians
# of the rounds are printed at the end.
# --strace: then one more h3 run of the first --bin under `strace -c -f`
# (its system calls by name).
#
# Everything started here (tlsfront, the clients) is stopped by PID on exit.
# Needs gtlsclient (package ngtcp2-client), h2load (nghttp2-client), curl,
# python3 (and openssl when build/test-pki is absent).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bins=()
rounds=3
conns=50
requests=100
h2_requests=20000
do_strace=0
while (($#)); do
  case $1 in
    --bin) bins+=("$2"); shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --h2-requests) h2_requests=$2; shift 2 ;;
    --strace) do_strace=1; shift ;;
    *) echo "h3-cpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
((${#bins[@]})) || bins=("$repo/build/tlsfront")
for t in gtlsclient h2load curl python3; do
  command -v "$t" >/dev/null || { echo "h3-cpu.sh: $t is missing" >&2; exit 1; }
done
for b in "${bins[@]}"; do [[ -x $b ]] || { echo "h3-cpu.sh: $b is not executable" >&2; exit 1; }; done
((requests >= 2)) || { echo "h3-cpu.sh: --requests must be at least 2" >&2; exit 2; }

tmp=$(mktemp -d /tmp/h3-cpu.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
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
ports=()
admins=()
for i in "${!bins[@]}"; do
  ports+=("$(free_port)")
  admins+=("$(free_port)")
  cat >"$tmp/tlsfront$i.toml" <<EOF
workers = 1
[[listen]]
address = "127.0.0.1:${ports[i]}"
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
address = "127.0.0.1:${admins[i]}"
EOF
  "${bins[i]}" --config "$tmp/tlsfront$i.toml" >"$tmp/tlsfront$i.out" 2>&1 &
  pids+=("$!")
  for _ in $(seq 100); do
    curl -sk -o /dev/null "https://127.0.0.1:${ports[i]}/f256" && break
    sleep 0.1
  done
  curl -skf -o /dev/null "https://127.0.0.1:${ports[i]}/f256" || { cat "$tmp/tlsfront$i.out" >&2; exit 1; }
done

# The tlsfront measured now: its index.
cur=0
cpu_ms() {  # its CPU time (user + system) in ms
  cat /proc/"${pids[cur]}"/task/*/schedstat | awk '{ s += $1 } END { printf "%.3f", s / 1e6 }'
}
metric() {  # a counter from its /metrics (0 when absent)
  curl -s "http://127.0.0.1:${admins[cur]}/metrics" |
    awk -v m="$1" '$1 == m { print $2; f = 1 } END { if (!f) print 0 }'
}
url() { printf 'https://127.0.0.1:%s/f256' "${ports[cur]}"; }
h3_conns() {  # --conns connections one after another, N URLs each
  local n=$1 u=() c
  for ((c = 0; c < n; c++)); do u+=("$(url)"); done
  for ((c = 0; c < conns; c++)); do
    timeout 20 gtlsclient --exit-on-all-streams-close --no-quic-dump --no-http-dump -q 127.0.0.1 "${ports[cur]}" \
      "${u[@]}" >/dev/null 2>"$tmp/gtlsclient.err" ||
      { echo "h3-cpu.sh: gtlsclient failed:" >&2; tail -5 "$tmp/gtlsclient.err" >&2; exit 1; }
  done
}
h2() {
  h2load -n "$h2_requests" -c 1 -m 10 "$(url)" >"$tmp/h2load.out" || { cat "$tmp/h2load.out" >&2; exit 1; }
  grep -q "^requests: $h2_requests total, $h2_requests started, $h2_requests done, $h2_requests succeeded" \
    "$tmp/h2load.out" || { echo "h3-cpu.sh: h2load:" >&2; grep "^requests:" "$tmp/h2load.out" >&2; exit 1; }
}
counters() { echo "$(metric tlsfront_quic_datagrams_received_total) $(metric tlsfront_quic_datagrams_sent_total)" \
  "$(metric tlsfront_quic_send_calls_total)"; }

for i in "${!bins[@]}"; do  # warm-up
  cur=$i
  h3_conns 2
  h2load -n 200 -c 1 -m 10 "$(url)" >/dev/null
done
declare -A res
n=$((conns * (requests - 1)))
for ((r = 1; r <= rounds; r++)); do
  for i in "${!bins[@]}"; do
    cur=$i
    read -r in0 out0 s0 < <(counters)
    t0=$(cpu_ms)
    h3_conns "$requests"
    t1=$(cpu_ms)
    read -r in1 out1 s1 < <(counters)
    h3_conns 1
    t2=$(cpu_ms)
    read -r in2 out2 s2 < <(counters)
    h2
    t3=$(cpu_ms)
    # per request: what the many-URL run cost beyond the one-URL run
    row=$(awk -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v n="$n" -v c="$conns" -v h="$h2_requests" \
      -v i0="$in0" -v i1="$in1" -v i2="$in2" -v o0="$out0" -v o1="$out1" -v o2="$out2" \
      -v s0="$s0" -v s1="$s1" -v s2="$s2" 'BEGIN {
        printf "%.2f %.2f %.3f %.2f %.3f %.3f %.3f", ((t1 - t0) - (t2 - t1)) * 1000 / n, (t3 - t2) * 1000 / h,
          (t2 - t1) / c, ((t1 - t0) - (t2 - t1)) / ((t3 - t2) * n / h),
          ((i1 - i0) - (i2 - i1)) / n, ((o1 - o0) - (o2 - o1)) / n, ((s1 - s0) - (s2 - s1)) / n }')
    res[$i,$r]=$row
    read -r h3 h2v hs ratio din dout sends <<<"$row"
    printf '%s round %d: h3 %s µs/request, h2 %s µs/request (h3/h2 %s), handshake %s ms; per h3 request: datagrams in %s, out %s, send calls %s\n' \
      "${bins[i]}" "$r" "$h3" "$h2v" "$ratio" "$hs" "$din" "$dout" "$sends"
  done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for i in "${!bins[@]}"; do
  col() { for ((r = 1; r <= rounds; r++)); do echo "${res[$i,$r]}" | awk -v k="$1" '{ print $k }'; done | median; }
  echo "${bins[i]}: median of $rounds: h3 $(col 1) µs/request, h2 $(col 2) µs/request (h3/h2 $(col 4))," \
    "handshake $(col 3) ms; per h3 request: datagrams in $(col 5), out $(col 6), send calls $(col 7)"
done

if ((do_strace)); then
  command -v strace >/dev/null || { echo "h3-cpu.sh: strace is missing" >&2; exit 1; }
  cur=0
  strace -c -f -p "${pids[0]}" -o "$tmp/strace.txt" &
  spid=$!
  sleep 1
  h3_conns "$requests"
  kill -INT "$spid"
  wait "$spid" || true
  echo "system calls of ${bins[0]} during $conns connections x $requests requests (h3, strace -c -f):"
  cat "$tmp/strace.txt"
fi
