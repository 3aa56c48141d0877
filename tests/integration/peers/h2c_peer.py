#!/usr/bin/python3
"""A plain HTTP/2 server over cleartext TCP (h2c, prior knowledge) on python3-h2.

  h2c_peer.py PORT_FILE [--goaway-after N] [--window BYTES] [--accept-after FILE]

Listens on 127.0.0.1 (a free port, written as "PORT\\n" to PORT_FILE), and
appends one line per accepted connection to PORT_FILE.conns and one JSON
object per request to PORT_FILE.requests (method, path, authority, the
fields, the body's length and the trailers).

  /echo         200, "ok <method> <path> <body bytes>", with response trailers
                (x-trailer: done) when the request's te is "trailers"
  /big?n=BYTES  200 with BYTES of "x", sent as the flow-control window allows
  /lentrailers?n=BYTES
                200 (content-type application/grpc) with "content-length:
                BYTES" in a HEADERS frame that does not end the stream,
                BYTES of "x" (no DATA frame when 0), then trailers
                (grpc-status: 0, grpc-message: ok) ending the stream: what
                nginx's add_trailer on an http2 listener sends
  /badfield?f=none|ctl|space|upper|status
                200 whose HEADERS (HPACK literals, encoded here: python3-h2
                would refuse to send them) carry "x-ok: fine" and one more
                field: "x-none: ok", or a malformed one: "x-ctl: a<0x01>b",
                "x bad: v" or "X-Up: v"; END_STREAM. "status": the same
                with ":status 700" and "x-none: ok"
  /stall        200 "stalled", then this connection is never read again (a
                server gone silent: PINGs go unanswered)
  /badframe?f=data0|hpack
                a connection error (RFC 9113 §5.4.1) instead of an answer: a
                DATA frame on stream 0 (PROTOCOL_ERROR, §6.1), or a HEADERS
                whose block indexes past the HPACK tables (COMPRESSION_ERROR,
                RFC 7541 §2.3.3); the connection then stays open, read but
                never answered, until the client closes it
  /noread       never answered, and its request DATA never acknowledged with
                a stream WINDOW_UPDATE (the connection's window is), so the
                client's send stalls on this stream only; a line "noread SID"
                goes to PORT_FILE.stalled at its first DATA
  /refuse       RST_STREAM REFUSED_STREAM (RFC 9113 §8.7: not processed)
  /flood?f=data0|window|priority|ping|settings|unknown
                200 HEADERS without END_STREAM, then up to 100,000 frames
                that move nothing forward, written as fast as the client
                reads: empty DATA on the stream, WINDOW_UPDATE on stream 0
                (increment 1), PRIORITY on the stream, PING, empty SETTINGS,
                or frames of an unknown type (0xfa); then "done" and
                END_STREAM if the connection is still there
  anything else 404

Every PING received (and answered, by python3-h2) appends a line to
PORT_FILE.pings, every RST_STREAM frame received a line "SID ERROR_CODE" to
PORT_FILE.resets (read off the bytes: python3-h2 reports none for a stream
already closed), every GOAWAY frame received its error code to
PORT_FILE.goaways.

--window BYTES: the connection's window and every stream's initial window
(SETTINGS_INITIAL_WINDOW_SIZE) are BYTES instead of 65,535; python3-h2 then
sends WINDOW_UPDATE only after BYTES/2 have been read, so a client's
request bodies up to that go up with no frame coming back.

--accept-after FILE: the listening socket's accept queue (backlog 0) is
filled with one connection of the peer's own and nothing is accepted until
FILE exists: the kernel drops a client's SYN meanwhile, so its connect
stays pending (it gets in with a SYN sent again after FILE appeared, about
1 s later; the peer's own connection is accepted first and then ignored).

--goaway-after N: once a connection has received N requests it sends GOAWAY
with the N-th stream as last-stream-id (RFC 9113 §6.8), answers the streams
up to it, never processes those above it, and closes when it is done.
"""
import json
import os
import socket
import sys
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings

lock = threading.Lock()


def append(path, line):
    with lock:
        with open(path, "a") as f:
            f.write(line + "\n")


class Conn:
    def __init__(self, sock, port_file, goaway_after, window):
        self.sock = sock
        self.port_file = port_file
        self.goaway_after = goaway_after
        self.window = window
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}
        self.pending = {}  # stream id -> bytes still to send
        self.received = 0
        self.last_stream = None
        self.stalled = False
        self.broken = False  # a malformed frame went out (/badframe): nothing more is sent
        self.raw = b""  # received bytes not yet split into frames (for .resets)
        self.preface = 24  # octets of the client's connection preface still to skip

    def send(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def respond(self, sid):
        s = self.streams.pop(sid)
        if self.last_stream is not None and sid > self.last_stream:
            return  # above our GOAWAY's last-stream-id: never processed
        headers = dict(s["headers"])
        path = headers.get(":path", "")
        append(self.port_file + ".requests", json.dumps({
            "method": headers.get(":method"), "path": path, "authority": headers.get(":authority"),
            "fields": s["headers"], "body": len(s["body"]), "trailers": s["trailers"]}))
        if path.split("?")[0] == "/echo":
            body = ("ok %s %s %d" % (headers.get(":method"), path, len(s["body"]))).encode()
            trailers = headers.get("te") == "trailers"
            self.h2.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
            self.h2.send_data(sid, body, end_stream=not trailers)
            if trailers:
                self.h2.send_headers(sid, [("x-trailer", "done")], end_stream=True)
        elif path.startswith("/lentrailers?n="):
            n = int(path[len("/lentrailers?n="):])
            self.h2.send_headers(sid, [(":status", "200"), ("content-type", "application/grpc"),
                                       ("content-length", str(n))])
            if n > 0:
                self.h2.send_data(sid, b"x" * n)
            self.h2.send_headers(sid, [("grpc-status", "0"), ("grpc-message", "ok")], end_stream=True)
        elif path.startswith("/badfield?f="):
            kind = path[len("/badfield?f="):]
            bad = {"none": (b"x-none", b"ok"), "ctl": (b"x-ctl", b"a\x01b"), "space": (b"x bad", b"v"), "upper": (b"X-Up", b"v"),
                   "status": (b"x-none", b"ok")}
            self.send()
            # :status 200 indexed (RFC 7541 static table 8), or 700 as a literal with that name.
            block = b"\x08\x03700" if kind == "status" else b"\x88"
            for name, value in (bad[kind], (b"x-ok", b"fine")):
                block += b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value  # literal, not indexed
            self.sock.sendall(len(block).to_bytes(3, "big") + bytes([1, 0x5]) + sid.to_bytes(4, "big") + block)
        elif path.startswith("/badframe?f="):
            self.send()
            if path.endswith("=data0"):
                frame = (3).to_bytes(3, "big") + bytes([0, 0x1]) + (0).to_bytes(4, "big") + b"bad"
            else:
                # Indexed field 126: past the static table and an empty dynamic one.
                frame = (1).to_bytes(3, "big") + bytes([1, 0x5]) + sid.to_bytes(4, "big") + bytes([0x80 | 126])
            self.sock.sendall(frame)
            self.broken = True
        elif path == "/refuse":
            self.h2.reset_stream(sid, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
        elif path.startswith("/flood?f="):
            self.flood(sid, path[len("/flood?f="):])
        elif path == "/stall":
            self.h2.send_headers(sid, [(":status", "200")])
            self.h2.send_data(sid, b"stalled", end_stream=True)
            self.stalled = True
        elif path.startswith("/big?n="):
            self.h2.send_headers(sid, [(":status", "200"), ("content-type", "application/octet-stream")])
            self.pending[sid] = int(path[len("/big?n="):])
            self.pump()
        else:
            self.h2.send_headers(sid, [(":status", "404")], end_stream=True)

    def flood(self, sid, kind):
        self.h2.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
        self.send()
        frame = {
            "data0": (0).to_bytes(3, "big") + bytes([0, 0]) + sid.to_bytes(4, "big"),
            "window": (4).to_bytes(3, "big") + bytes([8, 0]) + (0).to_bytes(4, "big") + (1).to_bytes(4, "big"),
            "priority": (5).to_bytes(3, "big") + bytes([2, 0]) + sid.to_bytes(4, "big") + (0).to_bytes(4, "big") + b"\x10",
            "ping": (8).to_bytes(3, "big") + bytes([6, 0]) + (0).to_bytes(4, "big") + b"floodpng",
            "settings": (0).to_bytes(3, "big") + bytes([4, 0]) + (0).to_bytes(4, "big"),
            "unknown": (0).to_bytes(3, "big") + bytes([0xFA, 0]) + (0).to_bytes(4, "big"),
        }[kind]
        self.broken = True  # python3-h2 knows nothing of these frames
        try:
            for _ in range(100):
                self.sock.sendall(frame * 1000)
            done = b"done"
            self.sock.sendall(len(done).to_bytes(3, "big") + bytes([0, 1]) + sid.to_bytes(4, "big") + done)
        except OSError:
            pass

    def pump(self):
        for sid in list(self.pending):
            left = self.pending[sid]
            while left > 0:
                n = min(left, 16384, self.h2.local_flow_control_window(sid))
                if n <= 0:
                    break
                self.h2.send_data(sid, b"x" * n)
                left -= n
            if left == 0:
                self.h2.end_stream(sid)
                del self.pending[sid]
            else:
                self.pending[sid] = left

    def note_resets(self, data):
        self.raw += data
        skip = min(self.preface, len(self.raw))
        self.preface -= skip
        self.raw = self.raw[skip:]
        while len(self.raw) >= 9:
            length = int.from_bytes(self.raw[0:3], "big")
            if len(self.raw) < 9 + length:
                break
            if self.raw[3] == 3 and length == 4:  # RST_STREAM
                sid = int.from_bytes(self.raw[5:9], "big") & 0x7FFFFFFF
                append(self.port_file + ".resets", "%d %d" % (sid, int.from_bytes(self.raw[9:13], "big")))
            if self.raw[3] == 7 and length >= 8:  # GOAWAY
                append(self.port_file + ".goaways", "%d" % int.from_bytes(self.raw[13:17], "big"))
            self.raw = self.raw[9 + length:]

    def run(self):
        self.h2.initiate_connection()
        if self.window:
            self.h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: self.window})
            self.h2.increment_flow_control_window(self.window - 65535)
        self.send()
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.note_resets(data)
            if self.broken:
                continue  # python3-h2 is out of step with what the client saw
            try:
                events = self.h2.receive_data(data)
            except Exception:
                return
            for e in events:
                if isinstance(e, h2.events.RequestReceived):
                    self.streams[e.stream_id] = {"headers": list(e.headers), "body": b"", "trailers": []}
                    self.received += 1
                    if self.goaway_after and self.received == self.goaway_after and self.last_stream is None:
                        self.last_stream = e.stream_id
                    if e.stream_ended and dict(e.headers).get(":path") != "/noread":
                        self.respond(e.stream_id)
                elif isinstance(e, h2.events.DataReceived):
                    s = self.streams.get(e.stream_id)
                    if s is not None and dict(s["headers"]).get(":path") == "/noread":
                        if not s["body"]:
                            append(self.port_file + ".stalled", "noread %d" % e.stream_id)
                        s["body"] += e.data
                        self.h2.increment_flow_control_window(e.flow_controlled_length)  # the connection's only
                        continue
                    if s is not None:
                        s["body"] += e.data
                    self.h2.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                elif isinstance(e, h2.events.PingReceived):
                    append(self.port_file + ".pings", "ping")
                elif isinstance(e, h2.events.TrailersReceived):
                    if e.stream_id in self.streams:
                        self.streams[e.stream_id]["trailers"] = list(e.headers)
                elif isinstance(e, h2.events.StreamEnded):
                    if e.stream_id in self.streams and dict(self.streams[e.stream_id]["headers"]).get(":path") != "/noread":
                        self.respond(e.stream_id)
                elif isinstance(e, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                    self.pump()
                elif isinstance(e, h2.events.StreamReset):
                    self.streams.pop(e.stream_id, None)
                    self.pending.pop(e.stream_id, None)
            if self.last_stream is not None and not self.pending and \
                    not any(sid <= self.last_stream for sid in self.streams):
                # Everything up to last-stream-id is answered: GOAWAY, then
                # a half-close, and the client's close ends it (no RST that
                # could cost the client the answers).
                self.h2.close_connection(last_stream_id=self.last_stream)
                self.send()
                self.sock.shutdown(socket.SHUT_WR)
                self.sock.settimeout(10)
                try:
                    while self.sock.recv(65536):
                        pass
                except OSError:
                    pass
                self.sock.close()
                return
            self.send()
            if self.stalled:
                # Gone silent: the socket stays open, nothing is read (the
                # process is killed at the end of the test).
                while True:
                    time.sleep(3600)


def main():
    port_file = sys.argv[1]
    opts = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    goaway_after = int(opts.get("--goaway-after", 0))
    window = int(opts.get("--window", 0))
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    accept_after = opts.get("--accept-after")
    own = None
    if accept_after:
        srv.listen(0)
        own = socket.create_connection(srv.getsockname())  # fills the accept queue
    else:
        srv.listen(128)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.rename(port_file + ".tmp", port_file)
    if accept_after:
        while not os.path.exists(accept_after):
            time.sleep(0.02)
        mine, _ = srv.accept()  # the peer's own: room for the next SYN
    while True:
        sock, addr = srv.accept()
        append(port_file + ".conns", "%s:%d" % addr)
        threading.Thread(target=Conn(sock, port_file, goaway_after, window).run, daemon=True).start()


if __name__ == "__main__":
    main()
