# Sourced by scripts/bench.sh and scripts/callgrind.sh: h2o configured the
# same way wherever it is the peer measured against.
#
# h2o_conf DIR PORT PKI CIPHERSUITES CIPHERS MAX_CONNECTIONS: writes
# DIR/openssl.cnf (h2o 2.2 takes TLS 1.3 suites and groups from OpenSSL's
# configuration: run it with OPENSSL_CONF=DIR/openssl.cnf) and prints the
# configuration up to its `paths:` key (one thread; logs, pid file in DIR;
# the bench's TLS settings, PKI/localhost.*); the caller prints the paths.
h2o_conf() {
  local dir=$1 port=$2 pki=$3 ciphersuites=$4 ciphers=$5 max_connections=$6
  cat >"$dir/openssl.cnf" <<CNF
openssl_conf = bench_conf
[bench_conf]
ssl_conf = bench_ssl
[bench_ssl]
system_default = bench_sys
[bench_sys]
Ciphersuites = $ciphersuites
Groups = X25519:P-256
CNF
  ((EUID == 0)) && echo "user: root"   # else it runs as nobody and cannot write $dir
  cat <<CONF
num-threads: 1
pid-file: $dir/h2o.pid
error-log: $dir/error.log
max-connections: $max_connections
http1-request-timeout: 75
http2-idle-timeout: 75
send-server-name: OFF
access-log:
  path: $dir/access.log
  format: '%h:%{remote}p [%t] "%r" %s %b %{duration}x %H %{ssl.protocol-version}x %{ssl.cipher}x reused=%{ssl.session-reused}x'
ssl-session-resumption:
  mode: all
listen:
  host: 127.0.0.1
  port: $port
  ssl:
    certificate-file: $pki/localhost.chain.pem
    key-file: $pki/localhost.key
    min-version: TLSv1.2
    cipher-suite: $ciphers
    cipher-preference: server
    ocsp-update-interval: 0
hosts:
  default:
    paths:
CONF
}
