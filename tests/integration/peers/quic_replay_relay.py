#!/usr/bin/env python3
"""A UDP relay that records a QUIC client's first flight and replays it.

quic_replay_relay.py TARGET_PORT REPLAY_PORT...

Listens on 127.0.0.1 (an ephemeral port, printed as "port N" on stdout),
forwards every datagram from the client to 127.0.0.1:TARGET_PORT and every
answer back to the client. The client's datagrams of its first 50 ms (its
Initial and its 0-RTT packets: the first flight an attacker on the path
would record) are kept. One second after the first datagram the relay sends
that first flight again from a fresh socket to each REPLAY_PORT (another
node, or the same one), as an attacker without the PSK would, reads what
comes back for half a second, prints "replayed N to PORT" for each and
exits. Loopback only; bounded: it exits 3 s after it started if no client
came.
"""
import select
import socket
import sys
import time


def main():
    target = ("127.0.0.1", int(sys.argv[1]))
    replays = [("127.0.0.1", int(p)) for p in sys.argv[2:]]
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", 0))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.bind(("127.0.0.1", 0))
    print("port", front.getsockname()[1], flush=True)

    client = None
    first_at = None
    flight = []
    deadline = time.monotonic() + 3.0
    while True:
        now = time.monotonic()
        if first_at is not None and now >= first_at + 1.0:
            break
        if first_at is None and now >= deadline:
            print("no client", flush=True)
            return 1
        ready, _, _ = select.select([front, back], [], [], 0.05)
        for s in ready:
            data, addr = s.recvfrom(65535)
            if s is front:
                client = addr
                if first_at is None:
                    first_at = time.monotonic()
                if time.monotonic() - first_at <= 0.05:
                    flight.append(data)
                back.sendto(data, target)
            elif client is not None:
                front.sendto(data, client)

    for dest in replays:
        attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        attacker.bind(("127.0.0.1", 0))
        for data in flight:
            attacker.sendto(data, dest)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            ready, _, _ = select.select([attacker], [], [], 0.05)
            if ready:
                attacker.recvfrom(65535)
        attacker.close()
        print("replayed", len(flight), "to", dest[1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
