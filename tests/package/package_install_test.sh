#!/usr/bin/env bash
# package_install_test.sh BUILD_DIR: the .deb package_build_test.sh made,
# installed on this machine for real (dpkg -i; root only), checked, started
# as its systemd unit would start it, and purged again, leaving nothing
# behind:
#   - the postinst made the system user and the self-signed placeholder;
#   - the installed units pass `systemd-analyze verify`;
#   - ExecStartPre (--test) passes as the unit's user, and ExecStart answers a
#     request on :443 and /healthz on the admin listener (127.0.0.1:9901),
#     run as systemd would (User=tlsfront with CAP_NET_BIND_SERVICE, setpriv;
#     this machine's PID 1 is no systemd, so `systemctl start` cannot be
#     tried), then stops on SIGTERM with status 0;
#   - logrotate accepts the shipped file; an edit of the configuration
#     survives a reinstallation, which keeps the placeholder certificate;
#   - `dpkg --purge` removes every file, the configuration, logs and state
#     (the system user stays, as Debian's practice is; the test removes it
#     when it made it, leaving the machine as it found it).
# Skips (77) when not root, when a tlsfront package is installed already (an
# operator's: never touched), or when :443 or :9901 is taken.
set -euo pipefail
build=$1
deb=$(ls "$build"/deb/tlsfront_*.deb 2>/dev/null | tail -n 1)
[[ -f "$deb" ]] || { echo "FAIL: no .deb in $build/deb (package_build_test.sh makes it)" >&2; exit 1; }
((EUID == 0)) || { echo "SKIP: dpkg -i needs root"; exit 77; }
if dpkg-query -W -f='${db:Status-Abbrev}' tlsfront 2>/dev/null | grep -q '^[ihr]'; then
  echo "SKIP: a tlsfront package is installed on this machine; not touching it"
  exit 77
fi
if ss -Htln 'sport = :443 or sport = :9901' | grep -q .; then
  echo "SKIP: 127.0.0.1:9901 or :443 is taken"
  exit 77
fi

fail=0
check() {
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}
# dpkg refuses at once while apt (scripts/install-deps.sh) holds its lock: retry.
dpkg_retry() {
  local out
  for _ in $(seq 60); do
    if out=$(dpkg "$@" 2>&1); then
      return 0
    fi
    grep -q 'lock' <<<"$out" || { echo "$out" >&2; return 1; }
    sleep 1
  done
  echo "$out" >&2
  return 1
}
pid=""
work=$(mktemp -d)
user_before=1
cleanup() {
  [[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null || true
  rm -rf "$work" /run/tlsfront
  dpkg-query -W tlsfront >/dev/null 2>&1 && dpkg_retry --purge tlsfront >/dev/null 2>&1 || true
  # The user (and its group) the postinst made for this test.
  if ((user_before == 0)) && getent passwd tlsfront >/dev/null; then
    deluser --system --quiet tlsfront >/dev/null 2>&1 || true
    getent group tlsfront >/dev/null && delgroup --system --quiet tlsfront >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

user_before=0
getent passwd tlsfront >/dev/null && user_before=1  # e.g. a from-source install's
dpkg_retry -i "$deb" || { echo "FAIL: dpkg -i $deb" >&2; exit 1; }
dpkg -L tlsfront >"$work/files"
check "dpkg says installed" bash -c 'dpkg-query -W -f="\${db:Status-Abbrev}" tlsfront | grep -q "^ii"'
check "the system user (there before: $user_before)" getent passwd tlsfront
check "the user's shell is nologin" bash -c 'getent passwd tlsfront | grep -q ":/usr/sbin/nologin$"'
check "the placeholder key belongs to tlsfront, mode 600" \
  bash -c '[[ "$(stat -c "%U %a" /etc/tlsfront/selfsigned.key)" == "tlsfront 600" ]]'
check "the placeholder certificate" openssl x509 -in /etc/tlsfront/selfsigned.pem -noout
cert_mtime=$(stat -c %Y /etc/tlsfront/selfsigned.pem)
check "the configuration is a conffile" bash -c 'dpkg-query -W -f="\${Conffiles}" tlsfront | grep -q "/etc/tlsfront/tlsfront.toml "'
check "man tlsfront" bash -c 'man -w tlsfront | grep -q /usr/share/man/man8/tlsfront.8.gz'
if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify /lib/systemd/system/tlsfront.service /lib/systemd/system/tlsfront.socket 2>&1) || true
  check "systemd-analyze verify of the installed units: $out" test -z "$(grep 'tlsfront\.\(service\|socket\)' <<<"$out")"
fi

# The unit's own command lines, as its User= and AmbientCapabilities= run them.
unit=/lib/systemd/system/tlsfront.service
pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
start=$(sed -n 's/^ExecStart=//p' "$unit")
check "the unit has ExecStartPre and ExecStart" test -n "$pre" -a -n "$start"
install -d -o tlsfront -g tlsfront -m 0755 /run/tlsfront  # RuntimeDirectory=
as_unit=(setpriv --reuid=tlsfront --regid=tlsfront --init-groups
         --inh-caps=+net_bind_service --ambient-caps=+net_bind_service --)
# shellcheck disable=SC2086  # the unit's command line, split as systemd splits it (no quotes in it)
check "ExecStartPre (--test) passes on the shipped configuration" "${as_unit[@]}" $pre
# shellcheck disable=SC2086
"${as_unit[@]}" $start >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 100); do
  grep -q 'listening on 0.0.0.0:443' "$work/err" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
check "ExecStart listens on :443: $(tail -n 5 "$work/err")" grep -q 'listening on 0.0.0.0:443' "$work/err"
check "the pid file" bash -c '[[ "$(cat /run/tlsfront/tlsfront.pid)" == "$1" ]]' _ "$pid"
check "/healthz" bash -c '[[ "$(curl -s --max-time 5 http://127.0.0.1:9901/healthz)" == ok ]]'
# The placeholder's name, so the request is not misdirected; no demo
# upstream listens on 127.0.0.1:9080, so tlsfront answers 502 itself.
name=$(openssl x509 -in /etc/tlsfront/selfsigned.pem -noout -subject -nameopt multiline | sed -n 's/^ *commonName *= *//p')
status=$(curl -sk --max-time 5 -o /dev/null -w '%{http_code}' --resolve "$name:443:127.0.0.1" "https://$name/") || true
check "a request on :443 gets tlsfront's answer (502: no demo upstream), got $status" test "$status" = 502
check "the access log has the request" bash -c 'for _ in $(seq 50); do grep -q "\"status\":502" /var/log/tlsfront/access.log 2>/dev/null && exit 0; sleep 0.1; done; exit 1'
check "logrotate accepts /etc/logrotate.d/tlsfront" bash -c "logrotate -d /etc/logrotate.d/tlsfront >/dev/null 2>&1"
kill -TERM "$pid"
code=0
wait "$pid" || code=$?
pid=""
check "SIGTERM: exit status 0 (was $code)" test "$code" = 0
check "the pid file is removed at exit" test ! -e /run/tlsfront/tlsfront.pid
rm -rf /run/tlsfront  # systemd removes RuntimeDirectory= at the stop

# An operator's edit of the conffile survives a reinstallation (an upgrade's path).
echo "# edited by package_install_test" >>/etc/tlsfront/tlsfront.toml
dpkg_retry -i "$deb" || { echo "FAIL: dpkg -i $deb again" >&2; exit 1; }
check "the edited configuration is kept" grep -qx '# edited by package_install_test' /etc/tlsfront/tlsfront.toml
check "the placeholder certificate is not regenerated" test "$(stat -c %Y /etc/tlsfront/selfsigned.pem)" = "$cert_mtime"

dpkg_retry --purge tlsfront || { echo "FAIL: dpkg --purge tlsfront" >&2; exit 1; }
check "dpkg forgot the package" bash -c '! dpkg-query -W tlsfront >/dev/null 2>&1'
left=""
while read -r f; do
  # Directories shared with other packages (/etc, /usr/share/man/man8, ...) stay.
  [[ -d "$f" ]] && ! [[ "$f" == */tlsfront || "$f" == */tlsfront/* ]] && continue
  [[ -e "$f" ]] && left+=" $f"
done <"$work/files"
check "no file of the package left:$left" test -z "$left"
for d in /etc/tlsfront /var/log/tlsfront /var/lib/tlsfront /run/tlsfront; do
  check "$d removed" test ! -e "$d"
done
check "no systemd enablement state left" \
  bash -c '! find /etc/systemd /var/lib/systemd -name "*tlsfront*" 2>/dev/null | grep -q .'

if ((fail)); then
  exit 1
fi
echo "package_install: ok"
