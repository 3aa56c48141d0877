#!/usr/bin/env bash
# gen-ticket-key.sh [--force] FILE
#
# Writes a new TLS session ticket key to FILE: 80 random bytes in nginx's
# ssl_session_ticket_key format (16-byte name, 32-byte HMAC secret, 32-byte
# AES-256 key), mode 0600. Refuses to overwrite FILE unless --force is given;
# the replacement is atomic (written next to FILE, then renamed over it).
set -euo pipefail

usage() { echo "usage: $0 [--force] FILE" >&2; exit 2; }

force=0
file=""
for arg in "$@"; do
  case "$arg" in
    -f|--force) force=1 ;;
    -h|--help) usage ;;
    -*) echo "$0: unknown option $arg" >&2; usage ;;
    *) [[ -z "$file" ]] || usage; file="$arg" ;;
  esac
done
[[ -n "$file" ]] || usage

if [[ -e "$file" && $force -eq 0 ]]; then
  echo "$0: $file exists; use --force to replace it" >&2
  exit 1
fi

umask 077
tmp=$(mktemp "$(dirname -- "$file")/.$(basename -- "$file").XXXXXX")
trap 'rm -f "$tmp"' EXIT
if command -v openssl >/dev/null 2>&1; then
  openssl rand -out "$tmp" 80
else
  head -c 80 /dev/urandom >"$tmp"
fi
[[ $(stat -c %s "$tmp") == 80 ]] || { echo "$0: short write to $tmp" >&2; exit 1; }
chmod 0600 "$tmp"
mv -f -- "$tmp" "$file"
trap - EXIT
