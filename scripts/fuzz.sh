#!/usr/bin/env bash
# fuzz.sh [--seconds N] [TARGET...]: builds the libFuzzer targets (tests/fuzz)
# in build-fuzz/ with Clang, then runs each TARGET (default: all) for N
# seconds (default 60), two at a time. Each run starts from the committed
# seed corpus (tests/fuzz/corpus/<target>), copied into a working corpus
# under build-fuzz/fuzz-work/<target> so runs never touch the tree, with the
# target's dictionary when it has one. Prints, per target, the executions,
# exec/s, cov and ft of libFuzzer's final stats; exits non-zero when any run
# found a crash, leak, timeout or out-of-memory, naming the reproducer
# (replay: build-fuzz/tests/fuzz/fuzz_<target> <reproducer>).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=60
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#*=}"; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(h1_request h2_session upstream_response config_toml ocsp_response ticket_decrypt access_log_json nginx_import request_path accept_encoding proxy_protocol quic_datagram)
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz: unknown target $t (known: ${all[*]})" >&2; exit 2; }
done

# The dictionary of each target that has one (tests/fuzz/dict).
declare -A dict=([h1_request]=h1 [h2_session]=h2 [upstream_response]=h1 [config_toml]=toml [nginx_import]=nginx [request_path]=path [accept_encoding]=accept_encoding [proxy_protocol]=proxy_protocol)

scripts/install-deps.sh
# shellcheck source=scripts/ccache-env.sh
source scripts/ccache-env.sh
build_start=$SECONDS
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTLSFRONT_FUZZ=ON -DTLSFRONT_TESTS=OFF "${ccache_args[@]}" >/dev/null
cmake --build build-fuzz --target $(printf 'fuzz_%s ' "${targets[@]}")
echo "fuzz: build took $((SECONDS - build_start)) s"

work=build-fuzz/fuzz-work
# ASan: leaks are findings; UBSan: stop at the first report with a stack.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# run_one TARGET: one libFuzzer run; its output in $work/<target>.log.
run_one() {
  local t="$1" dir="$work/$1"
  rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$dir/corpus/"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$dir/artifacts/")
  [[ -n "${dict[$t]:-}" ]] && args+=(-dict=tests/fuzz/dict/"${dict[$t]}".dict)
  build-fuzz/tests/fuzz/fuzz_"$t" "${args[@]}" "$dir/corpus" >"$dir.log" 2>&1
}

# Two at a time (the machine has 2 cores; each libFuzzer run uses one).
pids=()
declare -A pid_of
for t in "${targets[@]}"; do
  if ((${#pids[@]} >= 2)); then
    wait -n "${pids[@]}" || true
    live=()
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && live+=("$p"); done
    pids=("${live[@]}")
  fi
  run_one "$t" &
  pids+=($!)
  pid_of[$t]=$!
done
status=0
for t in "${targets[@]}"; do
  rc=0
  wait "${pid_of[$t]}" 2>/dev/null || rc=$?
  log="$work/$t.log"
  # libFuzzer's last "#N DONE cov: C ft: F ... exec/s: E" line.
  stats=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$stats")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$stats")
  eps=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log" | tail -1)
  # Findings: crash-, leak-, timeout-, oom- files. A slow-unit- file (a unit
  # over 10 s of wall time) is reported, not failed: on a loaded machine (a
  # niced run, CI beside other work) it is the scheduler's, not the code's;
  # replay it to tell (-timeout=10 still fails a unit that is really stuck).
  artifacts=$(find "$work/$t/artifacts" -type f ! -name 'slow-unit-*' 2>/dev/null | sort)
  slow=$(find "$work/$t/artifacts" -type f -name 'slow-unit-*' 2>/dev/null | sort)
  for a in $slow; do echo "fuzz: $t: a unit took over 10 s of wall time (replay to check it is not the machine's load): $a"; done
  if ((rc != 0)) || [[ -n "$artifacts" ]]; then
    status=1
    echo "fuzz: $t FAILED (exit $rc) after ${execs:-?} executions; log: $log"
    grep -E 'ERROR: |SUMMARY: |runtime error|illegal state' "$log" | head -5 | sed 's/^/fuzz:   /'
    for a in $artifacts; do echo "fuzz:   reproducer: $a"; done
  else
    printf 'fuzz: %-18s ok  executions %-10s exec/s %-7s cov %-6s ft %s\n' "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}"
  fi
done
exit "$status"
