#!/usr/bin/env bash
# Installs the Debian packages tlsfront needs to build, test and run.
# Idempotent: asks dpkg which packages are missing and installs only those;
# prints nothing when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libssl-dev openssl libuv1-dev node-llhttp libnghttp2-dev
  libtomlplusplus-dev libfmt-dev libhiredis-dev libsystemd-dev
  libgtest-dev libcurl4-openssl-dev libsimdjson-dev zlib1g-dev
  libre2-dev  # [[route]] path_regex
  libbrotli-dev  # [[route]] compress = ["br"] (zlib1g-dev: "gzip"); the tests decode with libbrotlidec
  clang libclang-rt-14-dev
  curl nghttp2-client redis-server wrk logrotate systemd
  nginx haproxy iproute2 procps
  h2o nghttp2-proxy  # scripts/bench.sh peers (h2o 2.2, nghttpx 1.52)
  prometheus  # promtool: tests the shipped alert rules (conf/prometheus)
  python3-websockets  # WebSocket client and echo server of the tunnel tests
  python3 util-linux  # scripts/bench-wan.sh (its summary; chrt) and the delay line's smoke test
  python3-grpcio  # gRPC client and service of the h2c upstream tests
  python3-h2  # a plain HTTP/2 (h2c) backend for the h2c upstream tests (tests/integration/peers/h2c_peer.py)
  libmimalloc-dev  # the tlsfront binary's malloc (CMakeLists.txt TLSFRONT_ALLOCATOR; docs/ARCHITECTURE.md "Memory allocator")
  libc-ares-dev  # [[upstream]] servers by DNS name: the asynchronous resolver (control/upstream_resolver.h)
  dnsmasq-base  # a real DNS server on loopback for the resolver tests (answers changed mid-test)
  jq  # scripts/run.sh's suggested `tail -f build/logs/access.log | jq .`
  pandoc man-db  # tlsfront(8) from man/tlsfront.8.md; `man --warnings` checks it
  debhelper fakeroot lintian dpkg-dev  # scripts/package.sh: the .deb and its check
  libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev  # QUIC and HTTP/3 (src/data/quic)
  ngtcp2-client  # gtlsclient: a real HTTP/3 client for the QUIC tests
  chromium  # a real browser over HTTP/3 (headless) for the QUIC interop test
  pebble  # a real ACME CA (RFC 8555) on loopback for the ACME client tests, with pebble-challtestsrv as its DNS
  adduser openssl  # the package's postinst (its user, its placeholder certificate), installed by tests/package
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  # "ii " = installed and configured; anything else (absent, rc, half-installed) needs work.
  if [[ "$status" != ii* ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2

sudo=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: not root and sudo not found; install as root: ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
