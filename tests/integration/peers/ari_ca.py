#!/usr/bin/env python3
"""A stand-in for a CA's ACME Renewal Information (RFC 9773) in front of pebble.

Debian 12's pebble (2.4) has no renewalInfo and no other ARI server is packaged,
so this small HTTPS responder serves, for the ARI tests:

  GET /dir                 pebble's directory (fetched from PEBBLE_DIR) with
                           "renewalInfo": "https://127.0.0.1:<port>/renewal-info"
                           added; every other URL stays pebble's, so orders go to
                           pebble itself.
  GET /renewal-info/<id>   the first PAST_COUNT certificate identifiers asked
                           about (the first certificate of each name) get a
                           window wholly in the past (the CA wants it renewed
                           now, as before a revocation) and an explanationURL;
                           any other identifier a window a year ahead.
                           Retry-After: 60.

MODE (the last argument):
  window           as above
  malformed        every renewalInfo answer is a window whose end precedes its
                   start (invalid, RFC 9773 §4.2)
  refuse-replaces  as "window", but every ACME request goes through this
                   responder to pebble (the Host header kept, so pebble's URLs
                   and the signed "url" name this responder), and a newOrder
                   carrying "replaces" is refused with 409 alreadyReplaced

Usage: ari_ca.py PORT_FILE LOG_FILE CHAIN KEY CAFILE PEBBLE_DIR PAST_COUNT MODE
It writes its port and a newline to PORT_FILE once listening, and one line per
renewalInfo request ("<id> past|future|malformed") and per refused order
("refused replaces <id>") to LOG_FILE. Loopback only; stopped by its PID.
"""
import base64
import datetime
import http.client
import http.server
import json
import ssl
import sys
import urllib.parse
import urllib.request

port_file, log_file, chain, key, cafile, pebble_dir = sys.argv[1:7]
past_count = int(sys.argv[7])
mode = sys.argv[8]
past_ids = []
pebble = urllib.parse.urlsplit(pebble_dir)
client_ctx = ssl.create_default_context(cafile=cafile)


def log(line):
    with open(log_file, "a") as f:
        f.write(line + "\n")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def stamp(delta):
    t = datetime.datetime.now(datetime.timezone.utc) + delta
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, body, retry_after=None):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.end_headers()
        self.wfile.write(data)

    def forward(self, method):
        """The request to pebble as is, under this responder's Host."""
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if method == "POST" and self.path.endswith("/order-plz") and body:
            payload = json.loads(b64url_decode(json.loads(body)["payload"]) or b"{}")
            if "replaces" in payload:
                log("refused replaces %s" % payload["replaces"])
                data = json.dumps({"type": "urn:ietf:params:acme:error:alreadyReplaced",
                                   "detail": "the test CA refuses every replaces", "status": 409}).encode()
                self.send_response(409)
                self.send_header("Content-Type", "application/problem+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
        conn = http.client.HTTPSConnection(pebble.hostname, pebble.port, context=client_ctx, timeout=10)
        headers = {"Host": "127.0.0.1:%d" % self.server.server_port}
        if self.headers.get("Content-Type"):
            headers["Content-Type"] = self.headers["Content-Type"]
        conn.request(method, self.path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        sys.stderr.write("ari_ca: pebble %s %s: %d %r\n" % (method, self.path, r.status, r.getheaders()))
        if self.path == "/dir":
            directory = json.loads(data)
            directory["renewalInfo"] = "https://127.0.0.1:%d/renewal-info" % self.server.server_port
            data = json.dumps(directory).encode()
        self.send_response(r.status)
        for h in ("Content-Type", "Replay-Nonce", "Location", "Retry-After", "Link", "Cache-Control"):
            if r.getheader(h):
                self.send_header(h, r.getheader(h))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self):
        self.forward("HEAD")

    def do_POST(self):
        self.forward("POST")

    def do_GET(self):
        if self.path == "/dir" and mode != "refuse-replaces":
            with urllib.request.urlopen(pebble_dir, context=client_ctx, timeout=10) as r:
                directory = json.load(r)
            directory["renewalInfo"] = "https://127.0.0.1:%d/renewal-info" % self.server.server_port
            self.answer(directory)
            return
        if self.path.startswith("/renewal-info/"):
            cert_id = self.path[len("/renewal-info/"):]
            if cert_id not in past_ids and len(past_ids) < past_count:
                past_ids.append(cert_id)
            past = cert_id in past_ids
            log("%s %s" % (cert_id, mode if mode == "malformed" else "past" if past else "future"))
            if mode == "malformed":
                window = {"start": stamp(datetime.timedelta(hours=-1)), "end": stamp(datetime.timedelta(hours=-2))}
                self.answer({"suggestedWindow": window}, 60)
            elif past:
                window = {"start": stamp(datetime.timedelta(hours=-2)), "end": stamp(datetime.timedelta(hours=-1))}
                self.answer({"suggestedWindow": window, "explanationURL": "https://ca.example/incident-42"}, 60)
            else:
                window = {"start": stamp(datetime.timedelta(days=365)), "end": stamp(datetime.timedelta(days=366))}
                self.answer({"suggestedWindow": window}, 60)
            return
        if mode == "refuse-replaces":
            self.forward("GET")
            return
        self.send_error(404)

    def log_message(self, fmt, *args):
        sys.stderr.write("ari_ca: " + (fmt % args) + "\n")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(chain, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
with open(port_file, "w") as f:
    f.write("%d\n" % server.server_port)
server.serve_forever()
