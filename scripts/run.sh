#!/usr/bin/env bash
# run.sh: build tlsfront (Release) and run it in front of the demo backend.
#
#   installs missing Debian packages, builds the binary and the demo backend
#   (not the test suites: scripts/test.sh builds those) into build/, makes a dev PKI in
#   build/dev-pki (once), starts tlsfront_test_backend on 127.0.0.1:9080 and
#   then tlsfront with conf/tlsfront.toml. Ctrl-C (or tlsfront exiting) stops both.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh
# shellcheck source=scripts/ccache-env.sh
source scripts/ccache-env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${ccache_args[@]}"
cmake --build build --target tlsfront tlsfront_test_backend

if [[ ! -s build/dev-pki/localhost.chain.pem || ! -s build/dev-pki/root.pem ]]; then
  scripts/gen-test-pki.sh build/dev-pki --dev
fi
mkdir -p build/logs

backend_bin=build/tests/tlsfront_test_backend
[[ -x "$backend_bin" ]] || { echo "run.sh: $backend_bin was not built" >&2; exit 1; }
[[ -f conf/tlsfront.toml ]] || { echo "run.sh: conf/tlsfront.toml is missing" >&2; exit 1; }

backend_pid=""
front_pid=""
# shellcheck disable=SC2317  # called from the traps
cleanup() {
  trap - EXIT INT TERM
  # The proxy first: its graceful stop lets in-flight requests finish, which
  # needs the backend still up. Then the backend.
  if [[ -n "$front_pid" ]]; then
    kill -TERM "$front_pid" 2>/dev/null || true
    wait "$front_pid" 2>/dev/null || true
  fi
  if [[ -n "$backend_pid" ]]; then
    kill -TERM "$backend_pid" 2>/dev/null || true
    wait "$backend_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

rm -f build/logs/backend.port
# Both children run in their own session (setsid; same PID, no fork), so a
# terminal Ctrl-C reaches only this script: its trap then stops tlsfront
# once, with SIGTERM, its graceful stop. (tlsfront handles SIGINT itself, and
# a second stop signal means "exit at once": a Ctrl-C delivered to tlsfront
# too would cut in-flight requests.)
setsid "$backend_bin" --listen 127.0.0.1:9080 --port-file build/logs/backend.port &
backend_pid=$!
for _ in $(seq 100); do
  [[ -s build/logs/backend.port ]] && break
  kill -0 "$backend_pid" 2>/dev/null || { echo "run.sh: the backend failed to start (is 127.0.0.1:9080 in use?)" >&2; exit 1; }
  sleep 0.05
done

cat <<'MSG'

tlsfront is starting on https://localhost:8443/ (Ctrl-C stops it and the backend).
  try:   curl --cacert build/dev-pki/root.pem https://localhost:8443/
  logs:  tail -f build/logs/access.log | jq .

MSG

# A child we wait for, so Ctrl-C reaches the traps at once.
setsid build/tlsfront --config conf/tlsfront.toml &
front_pid=$!
status=0
wait "$front_pid" || status=$?
front_pid=""
exit "$status"
