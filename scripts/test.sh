#!/usr/bin/env bash
# test.sh [--sanitize] [CTEST ARGS...]: build and run every test with ctest.
#
#   default      Release build in build/
#   --sanitize   ASan+UBSan RelWithDebInfo build in build-sanitize/
# Other arguments go to ctest (e.g. -R Session). Exit code is ctest's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=build
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
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
# ccache (installed by install-deps) keeps rebuilds of unchanged files cheap,
# also across clones: paths below the checkout are hashed relative to it, and
# the build directory is left out of the hash of -g compiles (ccache's
# hash_dir, on by default, made every clone's sanitizer build miss; the cost
# is that a cached object's debug info names the directory it was first built
# in).
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  cmake_args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -G Ninja "${cmake_args[@]}"
cmake --build "$dir"

status=0
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300 "${ctest_args[@]}" || status=$?
exit "$status"
