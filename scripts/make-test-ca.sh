#!/bin/sh
# Makes a throw-away CA and one certificate per node for a local secured cluster
# (config/secure-cluster/): PEM files Shale reads with ssl.keystore.type=PEM and
# ssl.truststore.type=PEM. For tests and local trials only: the CA key sits unencrypted next
# to the certificates.
#
#   scripts/make-test-ca.sh [out-dir] [nodes]     (defaults: config/secure-cluster/certs, 3)
#
# Writes <out-dir>/ca.pem (the truststore), <out-dir>/node-N.pem (an unencrypted PKCS#8 key
# followed by the node's certificate and the CA's: the keystore) for N in 1..nodes, and
# <out-dir>/client.pem (a client certificate, for clients of an SSL listener that requires
# one). Each node certificate names localhost and 127.0.0.1, the hosts the example configs
# advertise, so host-name verification (ssl.endpoint.identification.algorithm=https, Kafka's
# default) passes.
set -eu

if ! command -v openssl >/dev/null 2>&1; then
    echo "make-test-ca.sh: openssl is not installed; install it (e.g. apt-get install openssl)" >&2
    exit 1
fi

out=${1:-config/secure-cluster/certs}
nodes=${2:-3}
days=365
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days "$days" \
    -subj "/CN=shale test ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$work/ca.key" -out "$out/ca.pem" 2>/dev/null

# leaf <name> <common name> <extensions>
leaf() {
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$2/O=Shale Test" \
        -keyout "$work/$1.key" -out "$work/$1.csr" 2>/dev/null
    printf '%s\n' "$3" > "$work/$1.ext"
    openssl x509 -req -in "$work/$1.csr" -CA "$out/ca.pem" -CAkey "$work/ca.key" \
        -CAserial "$work/ca.srl" -CAcreateserial -days "$days" -extfile "$work/$1.ext" -out "$work/$1.crt" 2>/dev/null
    # Shale reads unencrypted PKCS#8 keys; the chain follows the key, leaf first.
    openssl pkcs8 -topk8 -nocrypt -in "$work/$1.key" > "$out/$1.pem"
    cat "$work/$1.crt" "$out/ca.pem" >> "$out/$1.pem"
    chmod 600 "$out/$1.pem"
}

i=1
while [ "$i" -le "$nodes" ]; do
    leaf "node-$i" "node-$i" "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
    i=$((i + 1))
done
leaf client client "extendedKeyUsage=clientAuth"

echo "CA and certificates written to $out: ca.pem, node-1.pem .. node-$nodes.pem, client.pem"
