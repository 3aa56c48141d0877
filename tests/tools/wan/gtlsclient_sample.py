#!/usr/bin/env python3
"""One HTTP/3 sample of scripts/bench-wan.sh: runs Debian's ngtcp2 client
(gtlsclient, package ngtcp2-client) once and prints one JSON line with the
keys tlsfront_wan_client prints for a TCP sample, read from the client's qlog
and the server's access log:

  connect_ms   the first packet from the server (its Initial: the
               counterpart of TCP's SYN-ACK)
  tls_ms       the client's first Handshake packet carrying CRYPTO data
               (its Finished: the handshake is done on the client's side)
  ttfb_ms      the first packet carrying a STREAM frame of request stream 0
  complete_ms  the last FIN of a request stream (all N responses read)

all in ms from the client's first packet (qlog time 0, the connection's
creation: the counterpart of socket() for TCP; ngtcp2 0.12's qlog has whole
milliseconds). Outcomes, checked on every sample: the access-log lines whose
remote_port is the client's UDP port (printed by gtlsclient as
"Sent packet: local=[ADDR]:PORT") give status, ssl_session_reused and
ssl_early_data; early_data is "accepted" (the line says ssl_early_data),
"not_accepted" (the client sent the request in a 0-RTT packet and the line
does not say so: the server refused it, or the packet was lost and the
client sent the request again after the handshake) or "not_sent".
initial_resent: the client sent more than one Initial datagram before the
server's first packet came (its first flight was lost).

The client's idle timeout is 8 s: tlsfront writes an HTTP/3 request's
access-log line once the client has acknowledged the whole response, and
when the client's last packets (its ACK, its CONNECTION_CLOSE) are lost,
only when the connection times out, at the smaller of both idle timeouts;
the line is waited for 12 s. lost_packets counts qlog recovery:packet_lost.
server_flight_bytes: QUIC packet bytes received before the client's
Finished; client_bytes_before: bytes the client sent before the server's
first packet (the server may send 3 times that before it has validated the
client's address, RFC 9000 §8.1).

gtlsclient's standard error is fully buffered (stdbuf -e 1M, written at
its exit): its debug log, which names its UDP port and cannot be turned
off without that, otherwise goes out in thousands of small writes, and on
the 4g profile they held its Finished 6 to 10 ms longer after the
server's handshake flight had arrived — the client's time, not the link's
or the server's.

usage: gtlsclient_sample.py --host ADDR --port N --sni NAME --access-log FILE
          --work DIR [--session FILE --tp FILE] [--no-early-data]
          [--requests N] [--path P] [--timeout S]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time


def qlog_events(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    out = []
    for rec in text.split("\x1e"):
        rec = rec.strip()
        if not rec:
            continue
        try:
            out.append(json.loads(rec))
        except ValueError:
            pass  # a record cut off by the client's exit
    return out[1:]  # the first is the trace header


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", required=True, type=int)
    ap.add_argument("--sni", required=True)
    ap.add_argument("--access-log", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--session")
    ap.add_argument("--tp")
    ap.add_argument("--no-early-data", action="store_true")
    ap.add_argument("--requests", type=int, default=1)
    ap.add_argument("--path", default="/json/256")
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()

    res = {"ok": False, "client": "gtlsclient", "transport": "quic", "protocol": "TLSv1.3",
           "tfo_syn_data_acked": False, "tcp_retrans": 0, "requests": a.requests}
    qdir = os.path.join(a.work, "qlog")
    shutil.rmtree(qdir, ignore_errors=True)
    os.makedirs(qdir)
    urls = [f"https://{a.sni}:{a.port}{a.path}{'&' if '?' in a.path else '?'}n={i}" for i in range(a.requests)]
    cmd = ["stdbuf", "-e", "1M", "gtlsclient", "--exit-on-all-streams-close", "--no-http-dump", f"--qlog-dir={qdir}",
           f"--sni={a.sni}", "--timeout=8s"]
    if a.session:
        cmd.append(f"--session-file={a.session}")
    if a.tp:
        cmd.append(f"--tp-file={a.tp}")
    if a.no_early_data:
        cmd.append("--disable-early-data")
    cmd += [a.host, str(a.port)] + urls
    err_path = os.path.join(a.work, "gtlsclient.err")
    before = os.path.getsize(a.access_log) if os.path.exists(a.access_log) else 0
    with open(err_path, "wb") as err:
        try:
            rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                timeout=a.timeout + 10).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    res["exit"] = rc

    port = None
    with open(err_path, "rb") as err:
        for line in err:
            m = re.match(rb"Sent packet: local=\[[^\]]*\]:(\d+) ", line)
            if m:
                port = int(m.group(1))
                break
    qlogs = [os.path.join(qdir, f) for f in os.listdir(qdir)]
    if port is None or len(qlogs) != 1:
        res["error"] = f"exit {rc}, client port {port}, {len(qlogs)} qlog files (see {err_path})"
        print(json.dumps(res))
        return

    sent_0rtt = False
    first_rx = tls = ttfb = None
    lost = 0
    rx_before_fin = 0
    tx_before_rx = 0
    fins = set()
    complete = None
    for ev in qlog_events(qlogs[0]):
        name, t, d = ev.get("name"), ev.get("time"), ev.get("data", {})
        if name == "recovery:packet_lost":
            lost += 1
            continue
        if name not in ("transport:packet_sent", "transport:packet_received"):
            continue
        ptype = d.get("header", {}).get("packet_type")
        frames = d.get("frames", [])
        length = d.get("raw", {}).get("length", 0)
        if name == "transport:packet_sent":
            if first_rx is None:
                tx_before_rx += length
            if ptype == "0RTT" and any(f.get("frame_type") == "stream" and f.get("stream_id") == 0 for f in frames):
                sent_0rtt = True
            if tls is None and ptype == "handshake" and any(f.get("frame_type") == "crypto" for f in frames):
                tls = t
            continue
        if first_rx is None:
            first_rx = t
        if tls is None:
            rx_before_fin += length
        for f in frames:
            if f.get("frame_type") != "stream":
                continue
            sid = f.get("stream_id")
            if sid == 0 and ttfb is None:
                ttfb = t
            if sid % 4 == 0 and f.get("fin"):  # a client-initiated bidirectional stream: a request's
                fins.add(sid)
                complete = t
    res.update({"connect_ms": first_rx, "tls_ms": tls, "ttfb_ms": ttfb, "complete_ms": complete,
                "responses_fin": len(fins), "lost_packets": lost, "tcp_retrans": lost,
                "server_flight_bytes": rx_before_fin, "client_bytes_before": tx_before_rx,
                "local_port": port})

    # The access log is written by tlsfront's log thread: wait for the lines.
    lines = []
    deadline = time.monotonic() + 12
    while True:
        lines = []
        try:
            with open(a.access_log, "rb") as f:
                f.seek(before)
                for raw in f:
                    try:
                        e = json.loads(raw)
                    except ValueError:
                        continue
                    if e.get("remote_port") == port and e.get("protocol") == "HTTP/3.0":
                        lines.append(e)
        except OSError:
            pass
        if len(lines) >= a.requests or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    statuses = [e.get("status") for e in lines]
    res["status"] = statuses[0] if len(set(statuses)) == 1 else statuses
    res["resumed"] = bool(lines) and all(e.get("ssl_session_reused") for e in lines)
    early = any(e.get("ssl_early_data") for e in lines)
    res["early_data"] = "accepted" if early else ("not_accepted" if sent_0rtt else "not_sent")
    res["initial_resent"] = tx_before_rx > 1200 + 100  # one coalesced Initial (+ 0-RTT) datagram is 1200 bytes
    res["early_requests"] = sum(bool(e.get("ssl_early_data")) for e in lines)
    ok = (rc == 0 and len(lines) == a.requests and all(s == 200 for s in statuses)
          and ttfb is not None and len(fins) == a.requests and first_rx is not None)
    res["ok"] = ok
    if not ok:
        res["error"] = (f"exit {rc}, {len(lines)} access-log lines for port {port} (statuses {statuses}), "
                        f"{len(fins)}/{a.requests} responses finished")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
