"""A throwaway PKI for the security matrix, made with the openssl command line.

Two independent CAs: the trusted one signs the broker's certificate (SAN IP:127.0.0.1 and
DNS:localhost, so hostname verification passes for clients that connect to 127.0.0.1) and a
client certificate; the other one, which no broker trusts, signs a second client certificate.
Every key is an unencrypted PKCS#8 PEM key (`BEGIN PRIVATE KEY`): Kafka's PEM key stores take
it without `ssl.key.password`, and Shale refuses that key.

Files (all PEM) in the directory given to `make_pki`:
  ca.pem                      the trusted CA's certificate (brokers' and clients' truststore)
  server.pem, server.key      the broker's certificate and key
  server-keystore.pem         key + certificate + CA: a broker's `ssl.keystore.location`
  client.pem, client.key      a client certificate signed by the trusted CA (CN=alice)
  client-keystore.pem         key + certificate + CA, for Java clients' PEM keystore
  other-ca.pem                the untrusted CA's certificate
  other-client.pem/.key       a client certificate signed by the untrusted CA (CN=mallory)
  other-client-keystore.pem   key + certificate + untrusted CA
"""

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"
KEY_ALGORITHM = ["-newkey", "rsa:2048"]


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_keystore: Path
    client_cert: Path
    client_key: Path
    client_keystore: Path
    other_ca: Path
    other_client_cert: Path
    other_client_key: Path
    other_client_keystore: Path


def _openssl(*args, cwd: Path):
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{proc.stderr[-1500:]}")


def _make_ca(directory: Path, name: str, cn: str):
    _openssl("req", "-x509", *KEY_ALGORITHM, "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-days", DAYS, "-subj", f"/CN={cn}",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)


def _make_leaf(directory: Path, name: str, ca: str, cn: str, extensions: str):
    """A key and a certificate signed by `ca`, with the given v3 extensions."""
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    _openssl("req", *KEY_ALGORITHM, "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={cn}/O=shale-compat", cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-set_serial", str(secrets.randbits(62) + 1), "-days", DAYS,
             "-out", f"{name}.pem", "-extfile", ext.name, cwd=directory)
    _check_pkcs8(directory / f"{name}.key")
    # A PEM key store as Kafka reads it: the private key, then the chain from the leaf up.
    keystore = directory / f"{name}-keystore.pem"
    keystore.write_text((directory / f"{name}.key").read_text() + (directory / f"{name}.pem").read_text()
                        + (directory / f"{ca}.pem").read_text())


def _check_pkcs8(key: Path):
    first = key.read_text().splitlines()[0]
    if first != "-----BEGIN PRIVATE KEY-----":
        raise RuntimeError(f"{key.name} is not an unencrypted PKCS#8 key (starts with {first!r})")


SERVER_EXTENSIONS = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                     "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
CLIENT_EXTENSIONS = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                     "extendedKeyUsage=clientAuth\n")


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    _make_ca(directory, "ca", "shale-compat-ca")
    _make_ca(directory, "other-ca", "shale-compat-untrusted-ca")
    _make_leaf(directory, "server", "ca", "localhost", SERVER_EXTENSIONS)
    _make_leaf(directory, "client", "ca", "alice", CLIENT_EXTENSIONS)
    _make_leaf(directory, "other-client", "other-ca", "mallory", CLIENT_EXTENSIONS)
    return Pki(
        ca=directory / "ca.pem",
        server_keystore=directory / "server-keystore.pem",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        client_keystore=directory / "client-keystore.pem",
        other_ca=directory / "other-ca.pem",
        other_client_cert=directory / "other-client.pem",
        other_client_key=directory / "other-client.key",
        other_client_keystore=directory / "other-client-keystore.pem",
    )
