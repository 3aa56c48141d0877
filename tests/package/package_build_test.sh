#!/usr/bin/env bash
# package_build_test.sh SOURCE_DIR BUILD_DIR: scripts/package.sh makes the
# .deb from the existing build tree (lintian: no tag that is not overridden
# with its reason), and the package holds what an operator needs: the binary,
# the units naming it, logrotate, the configuration as a conffile, the man
# page, the Prometheus rules and the Grafana dashboard; maintainer scripts
# that create the system user and purge what the service leaves.
# Leaves BUILD_DIR/deb/tlsfront_*.deb for package_install_test.sh.
set -euo pipefail
src=$1
build=$2
fail=0
check() {  # check DESCRIPTION COMMAND...: a failed COMMAND fails the test, named
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}

deb=$("$src/scripts/package.sh" "$build" "$build/deb" | tail -n 1) || { echo "FAIL: scripts/package.sh (debian/rules binary, or a lintian tag above)" >&2; exit 1; }
[[ -f "$deb" ]] || { echo "FAIL: scripts/package.sh made no .deb" >&2; exit 1; }
echo "built $deb"

contents=$(dpkg-deb -c "$deb" | awk '{print $1 " " $2 " " $6}')
for entry in \
  "-rwxr-xr-x root/root ./usr/sbin/tlsfront" \
  "-rw-r--r-- root/root ./lib/systemd/system/tlsfront.service" \
  "-rw-r--r-- root/root ./lib/systemd/system/tlsfront.socket" \
  "-rw-r--r-- root/root ./etc/logrotate.d/tlsfront" \
  "-rw-r--r-- root/root ./etc/tlsfront/tlsfront.toml" \
  "-rw-r--r-- root/root ./usr/share/man/man8/tlsfront.8.gz" \
  "-rw-r--r-- root/root ./usr/share/tlsfront/prometheus/tlsfront.rules.yml" \
  "-rw-r--r-- root/root ./usr/share/tlsfront/grafana/tlsfront.json" \
  "-rw-r--r-- root/root ./usr/share/doc/tlsfront/copyright" \
  "-rw-r--r-- root/root ./usr/share/lintian/overrides/tlsfront"; do
  check "the package holds $entry" grep -qxF -- "$entry" <<<"$contents"
done
# tlsfront.toml(5) is made from the configuration reference, when the tree has it.
if [[ -f "$src/docs/configuration.md" ]]; then
  check "the package holds tlsfront.toml(5)" grep -qxF -- "-rw-r--r-- root/root ./usr/share/man/man5/tlsfront.toml.5.gz" <<<"$contents"
fi
# Nothing of the build machine: no /usr/local, no build tree path.
check "no /usr/local in the package" bash -c '! grep -q "/usr/local" <<<"$1"' _ "$contents"

info=$(dpkg-deb -f "$deb")
check "Depends names adduser and the libraries" grep -Eq '^Depends: adduser, openssl, .*libssl3.*libuv1' <<<"$info"
check "Depends names the allocator (mimalloc)" grep -Eq '^Depends: .*libmimalloc2\.0' <<<"$info"
check "conffile /etc/tlsfront/tlsfront.toml" \
  bash -c 'dpkg-deb --ctrl-tarfile "$1" | tar -xO ./conffiles | grep -qx /etc/tlsfront/tlsfront.toml' _ "$deb"
check "conffile /etc/logrotate.d/tlsfront" \
  bash -c 'dpkg-deb --ctrl-tarfile "$1" | tar -xO ./conffiles | grep -qx /etc/logrotate.d/tlsfront' _ "$deb"
postinst=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst)
check "postinst creates the system user" grep -q 'adduser --system --group' <<<"$postinst"
postrm=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postrm)
check "postrm purges logs and state" grep -q 'rm -rf /var/log/tlsfront /var/lib/tlsfront' <<<"$postrm"

# The shipped files, as installed: units and configuration name installed paths.
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
unit="$root/lib/systemd/system/tlsfront.service"
check "the unit starts /usr/sbin/tlsfront" grep -qx 'ExecStart=/usr/sbin/tlsfront --config /etc/tlsfront/tlsfront.toml --pid-file /run/tlsfront/tlsfront.pid' "$unit"
check "the unit names the man page" grep -qx 'Documentation=man:tlsfront(8)' "$unit"
conf="$root/etc/tlsfront/tlsfront.toml"
for line in 'address = "0.0.0.0:443"' 'certificate = "/etc/tlsfront/selfsigned.pem"' \
            'key = "/etc/tlsfront/selfsigned.key"' 'access_log = "/var/log/tlsfront/access.log"'; do
  check "the configuration has $line" grep -qxF "$line" "$conf"
done
check "the configuration names no build tree" bash -c '! grep -n "build/" "$1"' _ "$conf"
# Besides the changed lines, the shipped configuration is the example's.
changed=$(diff "$src/conf/tlsfront.toml" "$conf" | grep -c '^>' || true)
check "the configuration differs from conf/tlsfront.toml in a few lines ($changed)" test "$changed" -le 16
man=$(zcat "$root/usr/share/man/man8/tlsfront.8.gz")
check "the man page is tlsfront(8)" grep -q '^\.TH "TLSFRONT" "8"' <<<"$man"
for page in "$root"/usr/share/man/man*/*.gz; do
  check "man --warnings -l $page: no warning" test -z "$(man --warnings -l "$page" 2>&1 >/dev/null)"
done
check "the binary runs" "$root/usr/sbin/tlsfront" --version

if ((fail)); then
  exit 1
fi
echo "package_build: ok"
