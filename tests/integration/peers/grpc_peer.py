#!/usr/bin/python3
"""A tiny gRPC service and client (python3-grpcio) for the h2c upstream tests.

No generated code: the methods take and return raw bytes (generic handlers).

  grpc_peer.py server PORT_FILE [--max-age-ms N] [--workers N] [--tls CERT KEY]
      Serves /test.Echo/{Unary,ServerStream,ClientStream,Bidi,Slow} on
      127.0.0.1 (h2c; with --tls, HTTP/2 over TLS only, ALPN h2, with CERT
      (a PEM chain) and KEY), writes "PORT\\n" to PORT_FILE once listening, and on
      every call appends its peer (one per upstream connection) to
      PORT_FILE.peers. --max-age-ms: gRPC's max_connection_age, so the server
      sends GOAWAY (gracefully) on every connection that old.
      Also serves the standard gRPC health-checking protocol,
      /grpc.health.v1.Health/Check, for the services "" and "test.Echo"
      (others: NOT_FOUND): SERVING, or NOT_SERVING while PORT_FILE.health
      holds "NOT_SERVING"; each check appends a line to PORT_FILE.checks.
  grpc_peer.py CALL TARGET CA [ARGS...]   (TARGET: host:port of tlsfront, TLS)
      unary TEXT | server_stream N | client_stream N | bidi N |
      deadline MS | slow MS (a unary call the service answers after MS) |
      paced_client_stream N MS (N messages, MS apart) | concurrent N |
      load SECONDS | stream_until_killed
      Prints one line: "ok ..." or "error CODE DETAILS".
"""
import sys
import threading
import time
from concurrent import futures

import grpc

IDENTITY = (lambda b: b, lambda b: b)
SERVICE = "test.Echo"


def server(port_file, max_age_ms=None, workers=256, tls=None):
    lock = threading.Lock()
    peers_path = port_file + ".peers"

    def note(ctx):
        with lock:
            with open(peers_path, "a") as f:
                f.write(ctx.peer() + "\n")

    def unary(req, ctx):
        note(ctx)
        if req == b"fail":
            ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing")
        ctx.set_trailing_metadata((("x-trailer", "t1"),))
        return b"echo:" + req

    def server_stream(req, ctx):
        note(ctx)
        n = int(req)
        for i in range(n):
            yield b"m%d" % i

    def client_stream(it, ctx):
        note(ctx)
        count = 0
        total = 0
        for m in it:
            count += 1
            total += len(m)
        return b"%d %d" % (count, total)

    def bidi(it, ctx):
        note(ctx)
        for m in it:
            yield b"re:" + m

    def slow(req, ctx):
        note(ctx)
        ms = int(req)
        time.sleep(ms / 1000.0)
        return b"slept"

    def forever(req, ctx):
        note(ctx)
        i = 0
        while ctx.is_active():
            yield b"tick%d" % i
            i += 1
            time.sleep(0.01)

    def health_check(req, ctx):
        # grpc.health.v1.HealthCheckRequest { string service = 1; }, decoded
        # by hand (no generated code): tag 0x0a, a one-octet length.
        service = req[2:2 + req[1]].decode() if len(req) >= 2 and req[0] == 0x0A else ""
        with lock:
            with open(port_file + ".checks", "a") as f:
                f.write(service + "\n")
        if service not in ("", SERVICE):
            ctx.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        try:
            with open(port_file + ".health") as f:
                serving = f.read().strip() != "NOT_SERVING"
        except FileNotFoundError:
            serving = True
        # HealthCheckResponse { ServingStatus status = 1; }: SERVING 1, NOT_SERVING 2.
        return bytes([0x08, 1 if serving else 2])

    health = {"Check": grpc.unary_unary_rpc_method_handler(health_check, *IDENTITY)}

    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, *IDENTITY),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, *IDENTITY),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream, *IDENTITY),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi, *IDENTITY),
        "Slow": grpc.unary_unary_rpc_method_handler(slow, *IDENTITY),
        "Forever": grpc.unary_stream_rpc_method_handler(forever, *IDENTITY),
    }
    options = []
    if max_age_ms:
        options += [("grpc.max_connection_age_ms", max_age_ms), ("grpc.max_connection_age_grace_ms", 10000)]
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=workers), options=options)
    srv.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),
                                  grpc.method_handlers_generic_handler("grpc.health.v1.Health", health)))
    if tls:
        with open(tls[0], "rb") as f:
            chain = f.read()
        with open(tls[1], "rb") as f:
            key = f.read()
        port = srv.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials(((key, chain),)))
    else:
        port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % port)
    import os
    os.rename(port_file + ".tmp", port_file)
    srv.wait_for_termination()


def channel(target, ca):
    with open(ca, "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    return grpc.secure_channel(target, creds, options=[("grpc.ssl_target_name_override", "localhost")])


def method(ch, kind, name):
    return getattr(ch, kind)("/%s/%s" % (SERVICE, name), request_serializer=None, response_deserializer=None)


def err(e):
    return "error %s %s" % (e.code().name, e.details())


def client(call, target, ca, args):
    ch = channel(target, ca)
    try:
        if call == "unary":
            resp, c = method(ch, "unary_unary", "Unary").with_call(args[0].encode(), timeout=20)
            trailers = dict(c.trailing_metadata() or ())
            return "ok %s %s" % (resp.decode(), trailers.get("x-trailer", "-"))
        if call == "server_stream":
            n = int(args[0])
            got = 0
            for i, m in enumerate(method(ch, "unary_stream", "ServerStream")(str(n).encode(), timeout=60)):
                if m != b"m%d" % i:
                    return "error ORDER message %d was %r" % (i, m)
                got += 1
            return "ok %d" % got
        if call == "client_stream":
            n = int(args[0])
            resp = method(ch, "stream_unary", "ClientStream")((b"x" * 100 for _ in range(n)), timeout=60)
            return "ok %s" % resp.decode()
        if call == "bidi":
            n = int(args[0])
            got = [m for m in method(ch, "stream_stream", "Bidi")((b"%d" % i for i in range(n)), timeout=60)]
            if got != [b"re:%d" % i for i in range(n)]:
                return "error ORDER %r" % got[:5]
            return "ok %d" % len(got)
        if call == "paced_client_stream":
            n, pause = int(args[0]), int(args[1]) / 1000.0

            def paced():
                for i in range(n):
                    if i:
                        time.sleep(pause)
                    yield b"x" * 100
            resp = method(ch, "stream_unary", "ClientStream")(paced(), timeout=60)
            return "ok %s" % resp.decode()
        if call == "slow":
            resp = method(ch, "unary_unary", "Slow")(args[0].encode(), timeout=60)
            return "ok %s" % resp.decode()
        if call == "deadline":
            method(ch, "unary_unary", "Slow")(b"3000", timeout=int(args[0]) / 1000.0)
            return "ok no deadline"
        if call == "concurrent":
            n = int(args[0])
            slow = method(ch, "unary_unary", "Slow")
            calls = [slow.future(b"300", timeout=30) for _ in range(n)]
            bad = [c.exception() for c in calls if c.exception() is not None]
            if bad:
                return "error %d failed: %s" % (len(bad), err(bad[0]))
            return "ok %d" % n
        if call == "load":
            # Many calls at once, for SECONDS: the count of failures.
            end = time.time() + float(args[0])
            unary = method(ch, "unary_unary", "Unary")
            ok = 0
            failed = []
            while time.time() < end:
                batch = [unary.future(b"load", timeout=20) for _ in range(20)]
                for c in batch:
                    if c.exception() is None:
                        ok += 1
                    else:
                        failed.append(err(c.exception()))
            if failed:
                return "error %d of %d failed: %s" % (len(failed), ok + len(failed), failed[0])
            return "ok %d" % ok
        if call == "stream_until_killed":
            got = 0
            try:
                for _ in method(ch, "unary_stream", "Forever")(b"", timeout=30):
                    got += 1
                    if got == 5:
                        print("streaming", flush=True)
            except grpc.RpcError as e:
                return err(e) + " after %d" % got
            return "ok ended after %d" % got
        return "error USAGE unknown call " + call
    except grpc.RpcError as e:
        return err(e)
    finally:
        ch.close()


def main():
    if sys.argv[1] == "server":
        max_age = None
        workers = 256
        tls = None
        rest = sys.argv[3:]
        while rest:
            if rest[0] == "--max-age-ms":
                max_age = int(rest[1])
            elif rest[0] == "--workers":
                workers = int(rest[1])
            elif rest[0] == "--tls":
                tls = (rest[1], rest[2])
                rest = rest[1:]
            rest = rest[2:]
        server(sys.argv[2], max_age, workers, tls)
        return
    print(client(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]), flush=True)


if __name__ == "__main__":
    main()
