#!/usr/bin/env bash
# test.sh [--sanitize] [CTEST ARGS...]: build and run every test with ctest.
#
#   default      Release build in build/
#   --sanitize   ASan+UBSan RelWithDebInfo build in build-sanitize/
# Other arguments go to ctest (e.g. -R Session). Exit code is ctest's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=build
# --prefix /usr: the tree scripts/package.sh makes the Debian package from.
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr)
ctest_args=()
for arg in "$@"; do
  case "$arg" in
    --sanitize)
      dir=build-sanitize
      # -O1 -g1: what the sanitizers' own docs advise (full stack traces with
      # line numbers), and a third less compile time than -O2 -g, which
      # matters most for CI's cold build.
      cmake_args=(-DTLSFRONT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
                  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
      export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
      ;;
    *) ctest_args+=("$arg") ;;
  esac
done

scripts/install-deps.sh
# shellcheck source=scripts/ccache-env.sh
source scripts/ccache-env.sh
cmake_args+=("${ccache_args[@]}")
cmake -S . -B "$dir" -G Ninja "${cmake_args[@]}"
cmake --build "$dir"

status=0
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300 "${ctest_args[@]}" || status=$?
exit "$status"
