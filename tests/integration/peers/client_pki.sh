#!/usr/bin/env bash
# client_pki.sh DIR: a client-certificate PKI for the mTLS tests, made with
# the openssl CLI at test time (the CA database is what `openssl ca` needs to
# revoke and to issue CRLs):
#   ca.pem/.key              "tlsfront client CA" (self-signed; signs the clients)
#   ca2.pem                  a second, unrelated CA (a changed client_ca: ca.pem + ca2.pem)
#   other-ca.pem/.key        a CA tlsfront does not trust
#   good.pem/.key            CN=partner-a,O=Example, issued by ca, valid 30 days
#   good-b.pem/.key          CN=partner-b,O=Example, the same (a second partner)
#   expired.pem/.key         issued by ca, valid 2020-01-01 .. 2021-01-01
#   revoked.pem/.key         issued by ca, revoked in crl-revoked.pem
#   wrong-ca.pem/.key        issued by other-ca
#   crl-empty.pem            ca's CRL revoking nothing
#   crl-revoked.pem          ca's CRL revoking revoked.pem
# Keys are ECDSA P-256.
set -euo pipefail
dir=${1:?usage: $0 DIR}
mkdir -p "$dir/db/new"
cd "$dir"
: >db/index.txt
echo 1000 >db/serial
echo 1000 >db/crlnumber
cat >ca.cnf <<CNF
[ ca ]
default_ca = client_ca
[ client_ca ]
dir = $dir/db
database = \$dir/index.txt
new_certs_dir = \$dir/new
serial = \$dir/serial
crlnumber = \$dir/crlnumber
default_md = sha256
default_crl_days = 30
policy = policy_any
unique_subject = no
copy_extensions = none
[ policy_any ]
commonName = supplied
organizationName = optional
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = unused
[ v3_ca ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ v3_client ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
CNF
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca_cert() {  # name subject
  key "$1.key"
  openssl req -new -x509 -config ca.cnf -key "$1.key" -subj "$2" -days 3650 -extensions v3_ca -out "$1.pem"
}
client() {  # name subject issuer [ca args...]
  local name=$1 subject=$2 issuer=$3
  shift 3
  key "$name.key"
  openssl req -new -config ca.cnf -key "$name.key" -subj "$subject" -out "$name.csr"
  openssl ca -batch -config ca.cnf -notext -cert "$issuer.pem" -keyfile "$issuer.key" -extensions v3_client \
    -in "$name.csr" -out "$name.pem" "$@" 2>/dev/null
}
ca_cert ca "/CN=tlsfront client CA"
ca_cert ca2 "/CN=tlsfront second client CA"
ca_cert other-ca "/CN=tlsfront untrusted client CA"
client good "/O=Example/CN=partner-a" ca -days 30
client good-b "/O=Example/CN=partner-b" ca -days 30
client expired "/CN=partner-expired" ca -startdate 20200101000000Z -enddate 20210101000000Z
client revoked "/CN=partner-revoked" ca -days 30
openssl ca -gencrl -config ca.cnf -cert ca.pem -keyfile ca.key -out crl-empty.pem 2>/dev/null
openssl ca -config ca.cnf -cert ca.pem -keyfile ca.key -revoke revoked.pem 2>/dev/null
openssl ca -gencrl -config ca.cnf -cert ca.pem -keyfile ca.key -out crl-revoked.pem 2>/dev/null
# other-ca's database would be another; its client is signed with x509 -req.
key wrong-ca.key
openssl req -new -config ca.cnf -key wrong-ca.key -subj "/CN=partner-wrong-ca" -out wrong-ca.csr
openssl x509 -req -in wrong-ca.csr -CA other-ca.pem -CAkey other-ca.key -set_serial 77 -days 30 \
  -extfile ca.cnf -extensions v3_client -out wrong-ca.pem 2>/dev/null
cat ca.pem ca2.pem >ca-and-ca2.pem
openssl verify -CAfile ca.pem good.pem >/dev/null
