#!/usr/bin/env bash
# package.sh [BUILD_DIR] [OUT_DIR]: the Debian package of tlsfront, from the
# CMake build tree BUILD_DIR (default build/, as scripts/test.sh makes it;
# configured here when missing), into OUT_DIR (default BUILD_DIR/deb), then
# lintian on it. Needs the packages of scripts/install-deps.sh.
#
#   The tree is configured for --prefix /usr when it is not already (no
#   recompilation: the prefix is in no compile flag), the binary and the man
#   page built when out of date, and packaging/debian's `debian/rules binary`
#   run under fakeroot in a scratch copy: debhelper installs the tree
#   (`cmake --install`), strips, compresses, computes the dependencies and
#   writes the maintainer scripts. Prints the .deb's path last.
#   LINTIAN=0 skips lintian; an error or warning tag fails the script
#   unless overridden in packaging/debian/tlsfront.lintian-overrides (each
#   with its reason); info and pedantic tags are printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$PWD
build=$(realpath -m "${1:-build}")
out=$(realpath -m "${2:-$build/deb}")

for tool in dh fakeroot dpkg-deb pandoc; do
  command -v "$tool" >/dev/null || { echo "package.sh: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  # No tree yet (a user who wants the package, not the tests): a Release
  # tree for /usr; only the binary and the man pages are built below.
  # shellcheck source=scripts/ccache-env.sh
  source "$src/scripts/ccache-env.sh"
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr "${ccache_args[@]}" >/dev/null
fi

prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
if [[ "$prefix" != /usr ]]; then
  cmake -S "$src" -B "$build" -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
fi
echo "package.sh: building tlsfront and its man pages in $build (a few minutes the first time)" >&2
cmake --build "$build" --target tlsfront man >/dev/null

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[[ -n "$version" ]] || { echo "package.sh: no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/packaging/debian" "$work/debian"
# The changelog's date is the last commit's (reproducible builds), its
# version the project's (CMakeLists.txt).
date=$(git -C "$src" log -1 --format=%aD 2>/dev/null || date -R)
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
cat >"$work/debian/changelog" <<CHANGELOG
tlsfront ($version) bookworm; urgency=medium

  * Built from commit $commit.

 -- tlsfront maintainers <maintainers@users.noreply.a-seed-4ce72c06.example>  $date
CHANGELOG
export SOURCE_DATE_EPOCH=$(date -d "$date" +%s)

mkdir -p "$out"
arch=$(dpkg --print-architecture)
deb="$out/tlsfront_${version}_${arch}.deb"
rm -f "$deb"
(cd "$work" && TLSFRONT_BUILD_DIR="$build" TLSFRONT_OUT_DIR="$out" DH_QUIET=1 fakeroot debian/rules binary) >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  echo "package.sh: debian/rules binary failed" >&2
  exit 1
}
[[ -f "$deb" ]] || { echo "package.sh: $deb was not made" >&2; exit 1; }

if [[ "${LINTIAN:-1}" != 0 ]]; then
  command -v lintian >/dev/null || { echo "package.sh: lintian not found (scripts/install-deps.sh)" >&2; exit 1; }
  # Errors and warnings fail unless overridden (with the reason) in
  # packaging/debian/tlsfront.lintian-overrides; info and pedantic tags are
  # shown, and today none is left without an override, but they do not fail
  # the build: they are often false positives (a spelling "error" in the
  # bytes of the binary), and so would a now unused override be.
  lintian --fail-on error,warning --info --display-info --pedantic "$deb" >&2
fi
echo "$deb"
