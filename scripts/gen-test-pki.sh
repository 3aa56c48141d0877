#!/usr/bin/env bash
# gen-test-pki.sh DIR [--dev]
#
# (Re)generates tlsfront's test PKI into DIR with the openssl CLI only:
#   root.pem/.key                 self-signed CA "tlsfront test root", 10 years
#   intermediate.pem/.key         CA, pathlen:0, signed by root
#   localhost.pem/.key            leaf: DNS:localhost, IP:127.0.0.1, IP:::1, serverAuth, 825 days
#   localhost.chain.pem           leaf + intermediate (what a server sends)
#   localhost.fullchain-with-root.pem  leaf + intermediate + root
# Bad and alternative cases:
#   expired.pem/.key (+ expired.chain.pem)      valid 2020-01-01 .. 2021-01-01 only
#   mismatch.key                                a P-256 key that is not localhost.pem's
#   leaf-only.pem                               localhost leaf without its intermediate
#   rsa.pem/.key (+ rsa.chain.pem)              RSA-2048 leaf for localhost
#   other-name.pem/.key (+ other-name.chain.pem) leaf for other.example only
#   wildcard.pem/.key (+ wildcard.chain.pem)    leaf for *.wild.example and wild.example
#   other-root.pem/.key                         unrelated self-signed CA "tlsfront unrelated root"
#   client.pem/.key (+ client.chain.pem)        client certificate "tlsfront test client", clientAuth
#   localhost.shuffled.pem                      root, intermediate, other-root, leaf (in that order)
#   not-yet-valid.pem/.key                      valid 2099-01-01 .. 2100-01-01 only
#   issuers/intermediate.pem                    a directory for [tls] issuers_dir
#   ticket-key-48.key, ticket-key-80.key, ticket-key-bad.key (47 bytes)  random bytes
# OCSP (tls/ocsp_*; no fixed ports: tests point [tls.ocsp] responder at their own responder):
#   ocsp-signer.pem/.key          delegated responder: EKU OCSPSigning, issued by the intermediate
#   ocsp-unrelated.pem/.key       self-signed "responder" with EKU OCSPSigning (an unrelated key)
#   ocsp-root-signed.pem/.key     EKU OCSPSigning but issued by the root, not by the leaves' issuer
#   revoked.pem/.key (+ revoked.chain.pem)        localhost leaf listed as revoked in ocsp-index.txt
#   must-staple.pem/.key (+ must-staple.chain.pem) localhost leaf with TLS Feature status_request
#   aia.pem/.key (+ aia.chain.pem)               localhost leaf with AIA OCSP URL http://ocsp.tlsfront.invalid/
#   ocsp-index.txt                the intermediate's certificate database for `openssl ocsp -index`:
#                                 every leaf above valid, revoked.pem revoked
#   root-issued.pem/.key          localhost leaf issued directly by the root (no intermediate);
#                                 root-issued.chain.pem = the leaf alone (what is sent),
#                                 root-issued.with-root.pem = leaf + root
#   root-ocsp-index.txt           the root's certificate database: root-issued.pem valid
# Keys are ECDSA P-256 unless stated; every *.key is mode 0600.
#
# --dev: keep an existing root.pem/root.key in DIR (so a dev root you chose to
# trust stays valid) and regenerate everything else.
#
# Staleness is the caller's business (the CMake rule reruns this when it changes).
set -euo pipefail

usage() { echo "usage: $0 DIR [--dev]" >&2; exit 2; }

dir=""
dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    -h|--help) usage ;;
    -*) echo "$0: unknown option $arg" >&2; usage ;;
    *) [[ -z "$dir" ]] || usage; dir="$arg" ;;
  esac
done
[[ -n "$dir" ]] || usage

command -v openssl >/dev/null || { echo "$0: openssl not found (scripts/install-deps.sh)" >&2; exit 1; }

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tlsfront-pki.XXXXXX")
trap 'rm -rf "$work"' EXIT
umask 077   # keys are written 0600; certificates are chmod'ed 0644 at the end

cat >"$work/openssl.cnf" <<'CNF'
[ req ]
distinguished_name = req_dn
prompt             = no
[ req_dn ]
CN = unused

[ v3_root ]
basicConstraints       = critical, CA:TRUE
keyUsage               = critical, keyCertSign, cRLSign
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid:always

[ v3_intermediate ]
basicConstraints       = critical, CA:TRUE, pathlen:0
keyUsage               = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid:always

[ v3_leaf_localhost ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = DNS:localhost, IP:127.0.0.1, IP:::1

[ v3_leaf_localhost_rsa ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature, keyEncipherment
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = DNS:localhost, IP:127.0.0.1, IP:::1

[ v3_leaf_other ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = DNS:other.example

[ v3_leaf_client ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = clientAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid

[ v3_leaf_wildcard ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = DNS:*.wild.example, DNS:wild.example

[ v3_leaf_revoked ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = DNS:localhost, IP:127.0.0.1, IP:::1

[ v3_leaf_must_staple ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = DNS:localhost, IP:127.0.0.1, IP:::1
tlsfeature             = status_request

[ v3_leaf_aia ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = DNS:localhost, IP:127.0.0.1, IP:::1
authorityInfoAccess    = OCSP;URI:http://ocsp.tlsfront.invalid/

[ v3_ocsp_signer ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = OCSPSigning
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
noCheck                = ignored

# "openssl ca" is only used for the expired leaf: OpenSSL 3.0's "x509 -req"
# cannot set an explicit notBefore/notAfter.
[ ca ]
default_ca = intermediate_ca
[ intermediate_ca ]
dir              = WORKDIR
database         = $dir/index.txt
new_certs_dir    = $dir/newcerts
serial           = $dir/serial
default_md       = sha256
policy           = policy_any
unique_subject   = no
copy_extensions  = none
email_in_dn      = no
[ policy_any ]
commonName       = supplied
organizationName = optional
CNF
sed -i "s|WORKDIR|$work|" "$work/openssl.cnf"
cnf="$work/openssl.cnf"

ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
             -pkeyopt ec_param_enc:named_curve -out "$1" 2>/dev/null; }
serial() { echo "0x$(openssl rand -hex 15)"; }   # < 2^120: always a positive 16-byte DER integer

# sign_leaf NAME KEY CN EXTSECTION: CSR for KEY, signed by the intermediate for 825 days.
sign_leaf() {
  local name=$1 key=$2 cn=$3 ext=$4
  openssl req -new -config "$cnf" -key "$key" -subj "/CN=$cn" -out "$work/$name.csr"
  openssl x509 -req -in "$work/$name.csr" -CA "$dir/intermediate.pem" -CAkey "$dir/intermediate.key" \
    -set_serial "$(serial)" -days 825 -sha256 -extfile "$cnf" -extensions "$ext" \
    -out "$dir/$name.pem" 2>/dev/null
}

# --- root ---------------------------------------------------------------------
if ((dev)) && [[ -s "$dir/root.pem" && -s "$dir/root.key" ]]; then
  echo "gen-test-pki: --dev: keeping existing root in $dir" >&2
else
  ec_key "$dir/root.key"
  openssl req -new -x509 -config "$cnf" -key "$dir/root.key" -subj "/CN=tlsfront test root" \
    -set_serial "$(serial)" -days 3650 -sha256 -extensions v3_root -out "$dir/root.pem"
fi

# --- intermediate -------------------------------------------------------------
ec_key "$dir/intermediate.key"
openssl req -new -config "$cnf" -key "$dir/intermediate.key" \
  -subj "/CN=tlsfront test intermediate" -out "$work/intermediate.csr"
openssl x509 -req -in "$work/intermediate.csr" -CA "$dir/root.pem" -CAkey "$dir/root.key" \
  -set_serial "$(serial)" -days 3650 -sha256 -extfile "$cnf" -extensions v3_intermediate \
  -out "$dir/intermediate.pem" 2>/dev/null

# --- localhost leaf and its bundles -------------------------------------------
ec_key "$dir/localhost.key"
sign_leaf localhost "$dir/localhost.key" localhost v3_leaf_localhost
cat "$dir/localhost.pem" "$dir/intermediate.pem" >"$dir/localhost.chain.pem"
cat "$dir/localhost.pem" "$dir/intermediate.pem" "$dir/root.pem" >"$dir/localhost.fullchain-with-root.pem"
cp "$dir/localhost.pem" "$dir/leaf-only.pem"

# --- bad / alternative cases --------------------------------------------------
ec_key "$dir/mismatch.key"

openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/rsa.key" 2>/dev/null
sign_leaf rsa "$dir/rsa.key" localhost v3_leaf_localhost_rsa
cat "$dir/rsa.pem" "$dir/intermediate.pem" >"$dir/rsa.chain.pem"

ec_key "$dir/other-name.key"
sign_leaf other-name "$dir/other-name.key" other.example v3_leaf_other
cat "$dir/other-name.pem" "$dir/intermediate.pem" >"$dir/other-name.chain.pem"

ec_key "$dir/client.key"
sign_leaf client "$dir/client.key" "tlsfront test client" v3_leaf_client
cat "$dir/client.pem" "$dir/intermediate.pem" >"$dir/client.chain.pem"

ec_key "$dir/wildcard.key"
sign_leaf wildcard "$dir/wildcard.key" "*.wild.example" v3_leaf_wildcard
cat "$dir/wildcard.pem" "$dir/intermediate.pem" >"$dir/wildcard.chain.pem"

ec_key "$dir/expired.key"
mkdir -p "$work/newcerts"
: >"$work/index.txt"
openssl rand -hex 15 >"$work/serial"
openssl req -new -config "$cnf" -key "$dir/expired.key" -subj "/CN=localhost" -out "$work/expired.csr"
openssl ca -batch -config "$cnf" -notext -cert "$dir/intermediate.pem" -keyfile "$dir/intermediate.key" \
  -startdate 20200101000000Z -enddate 20210101000000Z -extfile "$cnf" -extensions v3_leaf_localhost \
  -in "$work/expired.csr" -out "$dir/expired.pem" 2>/dev/null
cat "$dir/expired.pem" "$dir/intermediate.pem" >"$dir/expired.chain.pem"

ec_key "$dir/not-yet-valid.key"
openssl req -new -config "$cnf" -key "$dir/not-yet-valid.key" -subj "/CN=localhost" -out "$work/nyv.csr"
openssl ca -batch -config "$cnf" -notext -cert "$dir/intermediate.pem" -keyfile "$dir/intermediate.key" \
  -startdate 20990101000000Z -enddate 21000101000000Z -extfile "$cnf" -extensions v3_leaf_localhost \
  -in "$work/nyv.csr" -out "$dir/not-yet-valid.pem" 2>/dev/null

# Chain building: an unrelated CA, a bundle in the wrong order with extras,
# and an issuers_dir holding the intermediate.
ec_key "$dir/other-root.key"
openssl req -new -x509 -config "$cnf" -key "$dir/other-root.key" -subj "/CN=tlsfront unrelated root" \
  -set_serial "$(serial)" -days 3650 -sha256 -extensions v3_root -out "$dir/other-root.pem"
cat "$dir/root.pem" "$dir/intermediate.pem" "$dir/other-root.pem" "$dir/localhost.pem" >"$dir/localhost.shuffled.pem"
mkdir -p "$dir/issuers" && chmod 0755 "$dir/issuers"
cp "$dir/intermediate.pem" "$dir/issuers/intermediate.pem"
chmod 0644 "$dir/issuers/intermediate.pem"

# Ticket keys in nginx's ssl_session_ticket_key format (48 or 80 bytes), plus a bad length.
for n in 48 80; do openssl rand -out "$dir/ticket-key-$n.key" "$n"; done
openssl rand -out "$dir/ticket-key-bad.key" 47

# --- OCSP ---------------------------------------------------------------------
for leaf in revoked must-staple aia; do
  ec_key "$dir/$leaf.key"
  sign_leaf "$leaf" "$dir/$leaf.key" localhost "v3_leaf_${leaf//-/_}"
  cat "$dir/$leaf.pem" "$dir/intermediate.pem" >"$dir/$leaf.chain.pem"
done
ec_key "$dir/ocsp-signer.key"
sign_leaf ocsp-signer "$dir/ocsp-signer.key" "tlsfront test OCSP responder" v3_ocsp_signer
ec_key "$dir/ocsp-unrelated.key"
openssl req -new -x509 -config "$cnf" -key "$dir/ocsp-unrelated.key" -subj "/CN=tlsfront unrelated OCSP responder" \
  -set_serial "$(serial)" -days 825 -sha256 -extensions v3_ocsp_signer -out "$dir/ocsp-unrelated.pem" 2>/dev/null
ec_key "$dir/ocsp-root-signed.key"
openssl req -new -config "$cnf" -key "$dir/ocsp-root-signed.key" -subj "/CN=tlsfront root-signed OCSP responder" \
  -out "$work/ocsp-root-signed.csr"
openssl x509 -req -in "$work/ocsp-root-signed.csr" -CA "$dir/root.pem" -CAkey "$dir/root.key" \
  -set_serial "$(serial)" -days 825 -sha256 -extfile "$cnf" -extensions v3_ocsp_signer \
  -out "$dir/ocsp-root-signed.pem" 2>/dev/null
# index.txt lines: status, expiry (YYMMDDHHMMSSZ), revocation time, serial (hex), file, subject.
index_line() {
  local status=$1 cert=$2 revoked=${3:-}
  local serial
  serial=$(openssl x509 -in "$cert" -noout -serial | cut -d= -f2)
  printf '%s\t%s\t%s\t%s\tunknown\t%s\n' "$status" 491231235959Z "$revoked" "$serial" "/CN=localhost"
}
{
  for leaf in localhost rsa must-staple aia; do index_line V "$dir/$leaf.pem"; done
  index_line R "$dir/revoked.pem" 240101000000Z,keyCompromise
} >"$dir/ocsp-index.txt"
echo "unique_subject = no" >"$dir/ocsp-index.txt.attr"  # several leaves share CN=localhost
# A private PKI's leaf issued by the root itself: its OCSP issuer is the trust anchor, which is never sent.
ec_key "$dir/root-issued.key"
openssl req -new -config "$cnf" -key "$dir/root-issued.key" -subj "/CN=localhost" -out "$work/root-issued.csr"
openssl x509 -req -in "$work/root-issued.csr" -CA "$dir/root.pem" -CAkey "$dir/root.key" \
  -set_serial "$(serial)" -days 825 -sha256 -extfile "$cnf" -extensions v3_leaf_localhost \
  -out "$dir/root-issued.pem" 2>/dev/null
cp "$dir/root-issued.pem" "$dir/root-issued.chain.pem"
cat "$dir/root-issued.pem" "$dir/root.pem" >"$dir/root-issued.with-root.pem"
index_line V "$dir/root-issued.pem" >"$dir/root-ocsp-index.txt"
cp "$dir/ocsp-index.txt.attr" "$dir/root-ocsp-index.txt.attr"
chmod 0644 "$dir/ocsp-index.txt" "$dir/ocsp-index.txt.attr" "$dir/root-ocsp-index.txt" "$dir/root-ocsp-index.txt.attr"

chmod 0600 "$dir"/*.key
chmod 0644 "$dir"/*.pem

# --- self-check ---------------------------------------------------------------
openssl verify -CAfile "$dir/root.pem" -untrusted "$dir/intermediate.pem" "$dir/localhost.pem" >/dev/null
openssl verify -CAfile "$dir/root.pem" -untrusted "$dir/intermediate.pem" "$dir/rsa.pem" "$dir/other-name.pem" >/dev/null
if openssl verify -CAfile "$dir/root.pem" -untrusted "$dir/intermediate.pem" "$dir/expired.pem" >/dev/null 2>&1; then
  echo "gen-test-pki: expired.pem unexpectedly verifies" >&2; exit 1
fi
if openssl verify -CAfile "$dir/root.pem" -untrusted "$dir/intermediate.pem" "$dir/not-yet-valid.pem" >/dev/null 2>&1; then
  echo "gen-test-pki: not-yet-valid.pem unexpectedly verifies" >&2; exit 1
fi
if openssl verify -CAfile "$dir/root.pem" "$dir/leaf-only.pem" >/dev/null 2>&1; then
  echo "gen-test-pki: leaf-only.pem unexpectedly verifies without the intermediate" >&2; exit 1
fi
openssl verify -CAfile "$dir/root.pem" -untrusted "$dir/intermediate.pem" -purpose ocsphelper "$dir/ocsp-signer.pem" >/dev/null
openssl verify -CAfile "$dir/root.pem" "$dir/root-issued.pem" >/dev/null
openssl x509 -in "$dir/must-staple.pem" -noout -ext tlsfeature | grep -q status_request \
  || { echo "gen-test-pki: must-staple.pem lacks TLS Feature status_request" >&2; exit 1; }
[[ $(openssl x509 -in "$dir/aia.pem" -noout -ocsp_uri) == http://ocsp.tlsfront.invalid/ ]] \
  || { echo "gen-test-pki: aia.pem lacks its OCSP URL" >&2; exit 1; }
[[ $(openssl pkey -in "$dir/localhost.key" -pubout) == $(openssl x509 -in "$dir/localhost.pem" -noout -pubkey) ]] \
  || { echo "gen-test-pki: localhost.key does not match localhost.pem" >&2; exit 1; }
for n in 48 80 47; do
  f="$dir/ticket-key-$n.key"; [[ $n == 47 ]] && f="$dir/ticket-key-bad.key"
  [[ $(stat -c %s "$f") == "$n" ]] || { echo "gen-test-pki: $f is not $n bytes" >&2; exit 1; }
done
