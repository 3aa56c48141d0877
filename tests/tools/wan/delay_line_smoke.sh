#!/usr/bin/env bash
# delay_line_smoke.sh DELAY_LINE_BINARY: ctest smoke test of tlsfront_delay_line
# (the emulated link of scripts/bench-wan.sh). Counts, never timings:
#   - order kept: the datagrams arrive in the order they were sent;
#   - loss near the configured rate: 10 % loss with a fixed seed, 1000
#     datagrams: between 800 and 960 arrive, and the delay line's own counts
#     agree (received = delivered + lost);
#   - delay applied at all: with a 2 s one-way delay, at most a quarter of the
#     datagrams arrive before the sender has finished sending them all (it
#     takes a fraction of a second); without the delay nearly all would;
#   - bounded lifetime: the delay line exits by itself after --lifetime.
# Two network namespaces of its own (198.18.0.1 -> 198.18.0.2, UDP), removed
# at exit with every process it started (by PID). Exit 77 (skipped) without
# root or /dev/net/tun.
set -euo pipefail
bin=${1:?usage: $0 DELAY_LINE_BINARY}
((EUID == 0)) || { echo "skipped: needs root (network namespaces)"; exit 77; }
[[ -c /dev/net/tun ]] || { echo "skipped: no /dev/net/tun"; exit 77; }

count=1000
a=tlsfront-dlsmoke-a-$$
b=tlsfront-dlsmoke-b-$$
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlsfront-dlsmoke.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; cat "$tmp"/*.err 2>/dev/null || true; exit 1; }

ip netns add "$a"
ip netns add "$b"
for ns in "$a" "$b"; do ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1; done
ip netns exec "$a" "$bin" --dev-a dl-a --dev-b dl-b --lifetime 15 --delay-ab-ms 2000 --delay-ba-ms 2000 \
  --loss 10 --seed 7 --ready-file "$tmp/ready" --stats-file "$tmp/stats" 2>"$tmp/delay_line.err" &
line=$!
pids+=("$line")
for ((i = 0; i < 100; i++)); do [[ -e $tmp/ready ]] && break; sleep 0.1; done
[[ -e $tmp/ready ]] || fail "the delay line did not start"
ip -n "$a" link set dev dl-b netns "$b"
ip -n "$a" addr add 198.18.0.1 peer 198.18.0.2 dev dl-a
ip -n "$b" addr add 198.18.0.2 peer 198.18.0.1 dev dl-b
ip -n "$a" link set dl-a up
ip -n "$b" link set dl-b up

# Receiver: every datagram's number, and how many came before the sender's "sent" file existed.
ip netns exec "$b" python3 - "$tmp" "$count" >"$tmp/received" 2>"$tmp/receiver.err" <<'PY' &
import os, socket, sys
tmp, count = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.2", 9000))
open(os.path.join(tmp, "listening"), "w").close()
s.settimeout(8)
seqs, early = [], 0
while len(seqs) < count:
    try:
        data, _ = s.recvfrom(64)
    except socket.timeout:
        break
    if not os.path.exists(os.path.join(tmp, "sent")):
        early += 1
    seqs.append(int(data))
    s.settimeout(3)  # after the first arrival: the rest come at the sender's pace
print(early, " ".join(map(str, seqs)))
PY
pids+=("$!")
receiver=$!
for ((i = 0; i < 100; i++)); do [[ -e $tmp/listening ]] && break; sleep 0.1; done
[[ -e $tmp/listening ]] || fail "the receiver did not start"

ip netns exec "$a" python3 - "$count" 2>"$tmp/sender.err" <<'PY' || fail "the sender failed"
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[1])):
    s.sendto(str(i).encode(), ("198.18.0.2", 9000))
    time.sleep(0.0002)  # below the TUN device's queue: loss is the delay line's alone
PY
touch "$tmp/sent"
wait "$receiver" || fail "the receiver failed"

read -r early seqs <"$tmp/received" || true
read -r -a got <<<"${seqs:-}"
n=${#got[@]}
echo "received $n of $count, $early before the sender finished"
for ((i = 1; i < n; i++)); do
  ((got[i] > got[i - 1])) || fail "order: ${got[i - 1]} then ${got[i]}"
done
((n >= 800 && n <= 960)) || fail "10 % loss: $n of $count arrived (expected 800..960)"
((early * 4 <= n)) || fail "delay: $early of $n arrived before the sender had finished"

# It exits by itself at --lifetime (15 s from its start) and writes its counts.
for ((i = 0; i < 200; i++)); do kill -0 "$line" 2>/dev/null || break; sleep 0.1; done
kill -0 "$line" 2>/dev/null && fail "the delay line still runs after its lifetime"
wait "$line" || fail "the delay line exited with an error"
stats=$(cat "$tmp/stats")
echo "delay line: $stats"
read -r recv delivered lost < <(python3 -c 'import json,sys; d=json.load(sys.stdin)["ab"]; print(d["received"], d["delivered"], d["lost"])' <<<"$stats")
((delivered == n)) || fail "the delay line delivered $delivered, the receiver got $n"
((recv == delivered + lost)) || fail "received $recv != delivered $delivered + lost $lost"
echo PASS
