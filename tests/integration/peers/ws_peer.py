#!/usr/bin/python3
"""WebSocket peers for the tunnel tests (python3-websockets, RFC 6455).

server PORT_FILE [--tls CERT KEY]
                        echo server on 127.0.0.1:0; writes "PORT\n" to PORT_FILE
                        and "closed PATH" to stdout when a connection ends.
                        --tls: serves TLS only (wss), with CERT (a PEM chain)
                        and KEY.
                        /echo: echoes every message; /stream/N: sends N bytes
                        (64 KiB binary messages) then closes; /seq/N: the
                        same with each byte known (seq_message), so that a
                        reader can check order; /greet: sends GREETING
                        (two messages, the second 40,000 bytes) in the same
                        write as its 101, then echoes; /close: closes the TCP
                        connection right after the handshake; /refuse:
                        answers 403 (no upgrade).
echo URL COUNT          sends COUNT messages (text and binary) through URL,
                        checks each echo; prints "ok COUNT".
slow URL BYTES          reads nothing for STALL_SECONDS, then BYTES of
                        messages with a pause per message (a stalled, then
                        slow reader); prints "ok BYTES".
expect_status URL       the handshake must fail; prints the HTTP status.
expect_close URL        the connection must close without a message; prints "closed".
The client modes use TLS without verification (loopback, test PKI)."""
import asyncio
import http
import os
import ssl
import sys

import websockets

CHUNK = 64 * 1024
STALL_SECONDS = 4  # slow mode: how long the reader reads nothing at first
# /seq/N: message k of a stream holds bytes (k + i) % 251 for i = 0, 1, ...
SEQ_PATTERN = bytes(i % 251 for i in range(CHUNK + 251))


def seq_message(k, n):
    return SEQ_PATTERN[k % 251:k % 251 + n]


def server_frame(opcode, payload):
    """An unmasked RFC 6455 frame (FIN set), as a server sends it."""
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 127]) + n.to_bytes(8, "big")
    return head + payload


# /greet: a text message, then a binary one larger than a TLS record (over
# TLS the write is then several records in one flight).
GREETING = server_frame(0x1, b"hello from upstream") + server_frame(0x2, bytes(i % 256 for i in range(40000)))


class Protocol(websockets.WebSocketServerProtocol):
    def write_http_response(self, status, headers, body=None):
        if status != http.HTTPStatus.SWITCHING_PROTOCOLS or self.path != "/greet":
            return super().write_http_response(status, headers, body)
        # The 101 and the first messages in one write: one TLS flight (the
        # 101 and the text message share a record), so that the proxy reads
        # them together.
        self.response_headers = headers
        head = f"HTTP/1.1 {status.value} {status.phrase}\r\n" + str(headers)
        self.transport.write(head.encode() + GREETING)


async def handler(ws, path):
    try:
        await serve(ws, path)
    finally:
        print(f"closed {path}", flush=True)


async def serve(ws, path):
    if path in ("/echo", "/greet"):
        async for message in ws:
            await ws.send(message)
    elif path.startswith("/stream/"):
        left = int(path.rsplit("/", 1)[1])
        block = os.urandom(CHUNK)  # incompressible: permessage-deflate must not shrink the stream
        while left > 0:
            n = min(left, CHUNK)
            await ws.send(block[:n])
            left -= n
        await ws.close()
    elif path.startswith("/seq/"):
        left = int(path.rsplit("/", 1)[1])
        k = 0
        while left > 0:
            n = min(left, CHUNK)
            await ws.send(seq_message(k, n))
            left -= n
            k += 1
        await ws.close()
    elif path == "/close":
        ws.transport.abort()


async def refuse(path, headers):
    if path == "/refuse":
        return (http.HTTPStatus.FORBIDDEN, [("Content-Type", "text/plain")], b"upgrade refused\n")
    return None


def client_ssl():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def main():
    mode = sys.argv[1]
    if mode == "server":
        server_ssl = None
        if sys.argv[3:4] == ["--tls"]:
            server_ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            server_ssl.load_cert_chain(sys.argv[4], sys.argv[5])
        server = await websockets.serve(handler, "127.0.0.1", 0, process_request=refuse, max_size=None,
                                        ssl=server_ssl, create_protocol=Protocol)
        port = server.sockets[0].getsockname()[1]
        tmp = sys.argv[2] + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.rename(tmp, sys.argv[2])
        await asyncio.Future()
    url = sys.argv[2]
    if mode == "echo":
        count = int(sys.argv[3])
        async with websockets.connect(url, ssl=client_ssl(), max_size=None) as ws:
            for i in range(count):
                msg = f"message {i}" if i % 2 == 0 else bytes([i % 256]) * (i * 37 % 5000 + 1)
                await ws.send(msg)
                echo = await asyncio.wait_for(ws.recv(), 10)
                if echo != msg:
                    print(f"mismatch at {i}")
                    return 1
        print(f"ok {count}")
    elif mode == "slow":
        want = int(sys.argv[3])
        got = 0
        async with websockets.connect(url, ssl=client_ssl(), max_size=None, max_queue=1,
                                      read_limit=CHUNK, write_limit=CHUNK) as ws:
            try:
                # First a reader that does not read at all: what the server
                # sends meanwhile must stay in the socket buffers, not pile
                # up in the proxy (its backpressure is what stops the server).
                await asyncio.sleep(STALL_SECONDS)
                while got < want:
                    got += len(await asyncio.wait_for(ws.recv(), 30))
                    await asyncio.sleep(0.002)
            except websockets.ConnectionClosed:
                pass
        print(f"ok {got}")
    elif mode == "expect_status":
        try:
            async with websockets.connect(url, ssl=client_ssl()):
                print("upgraded")
        except websockets.InvalidStatusCode as e:
            print(e.status_code)
    elif mode == "expect_close":
        try:
            async with websockets.connect(url, ssl=client_ssl()) as ws:
                await asyncio.wait_for(ws.recv(), 10)
                print("message")
        except websockets.ConnectionClosed:
            print("closed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
