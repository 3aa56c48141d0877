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

Usage: ari_ca.py PORT_FILE LOG_FILE CHAIN KEY CAFILE PEBBLE_DIR PAST_COUNT
It writes its port and a newline to PORT_FILE once listening, and one line per
renewalInfo request ("<id> past|future") to LOG_FILE. Loopback only; stopped by
its PID.
"""
import datetime
import http.server
import json
import ssl
import sys
import urllib.request

port_file, log_file, chain, key, cafile, pebble_dir = sys.argv[1:7]
past_count = int(sys.argv[7])
past_ids = []


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

    def do_GET(self):
        if self.path == "/dir":
            ctx = ssl.create_default_context(cafile=cafile)
            with urllib.request.urlopen(pebble_dir, context=ctx, timeout=10) as r:
                directory = json.load(r)
            directory["renewalInfo"] = "https://127.0.0.1:%d/renewal-info" % self.server.server_port
            self.answer(directory)
            return
        if self.path.startswith("/renewal-info/"):
            cert_id = self.path[len("/renewal-info/"):]
            if cert_id not in past_ids and len(past_ids) < past_count:
                past_ids.append(cert_id)
            past = cert_id in past_ids
            with open(log_file, "a") as f:
                f.write("%s %s\n" % (cert_id, "past" if past else "future"))
            if past:
                window = {"start": stamp(datetime.timedelta(hours=-2)), "end": stamp(datetime.timedelta(hours=-1))}
                self.answer({"suggestedWindow": window, "explanationURL": "https://ca.example/incident-42"}, 60)
            else:
                window = {"start": stamp(datetime.timedelta(days=365)), "end": stamp(datetime.timedelta(days=366))}
                self.answer({"suggestedWindow": window}, 60)
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
