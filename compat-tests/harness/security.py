"""The security modes of the compatibility suite (`run.sh --security MODE`).

A mode gives the broker (either target, with the same properties) a listener named SECURE on one
security protocol beside PLAINTEXT, and gives the clients the settings to reach it, in files this
module writes and names in environment variables:

  COMPAT_SECURITY_MODE        the mode's name
  COMPAT_SECURITY_JAVA        a Java client properties file (the Java client; the Kafka CLI tools'
                              --command-config)
  COMPAT_SECURITY_LIBRDKAFKA  a librdkafka properties file (kcat -F, confluent-kafka)
  COMPAT_SECURITY_JSON        the same settings as JSON (kafka-python, aiokafka, franz-go, kafkajs):
                              {"security_protocol", "ca_file", "cert_file", "key_file", "keystore_file",
                               "sasl_mechanism", "username", "password"} (absent ones are null)

The `auth_failure` scenario gets the same variables pointing at a second set of files that is
wrong in one way: a wrong password (SASL modes), a client certificate from a CA the broker does
not trust (mtls), or a truststore holding only that other CA (ssl).
"""

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from pki import Pki

LISTENER = "SECURE"
CLIENT_USER = "alice"
USERS = {"admin": "admin-secret", CLIENT_USER: "alice-secret"}
WRONG_PASSWORD = "alice-wrong-secret"
SCRAM_ITERATIONS = 8192
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
ENV_VARS = ("COMPAT_SECURITY_MODE", "COMPAT_SECURITY_JAVA", "COMPAT_SECURITY_LIBRDKAFKA", "COMPAT_SECURITY_JSON")


@dataclass(frozen=True)
class Mode:
    name: str
    protocol: str  # SSL, SASL_PLAINTEXT or SASL_SSL
    mechanism: Optional[str] = None  # PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    client_auth: bool = False  # ssl.client.auth=required

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def scram(self) -> bool:
        return bool(self.mechanism) and self.mechanism.startswith("SCRAM-")

    @property
    def wrong_thing(self) -> str:
        """What the auth_failure scenario's settings get wrong."""
        if self.mechanism:
            return f"a wrong {self.mechanism} password"
        if self.client_auth:
            return "a client certificate signed by a CA the broker does not trust"
        return "a truststore holding only a CA that did not sign the broker's certificate"


MODES = [
    Mode("ssl", "SSL"),
    Mode("mtls", "SSL", client_auth=True),
    Mode("sasl_plaintext-plain", "SASL_PLAINTEXT", "PLAIN"),
    Mode("sasl_ssl-plain", "SASL_SSL", "PLAIN"),
    Mode("sasl_plaintext-scram-sha-256", "SASL_PLAINTEXT", "SCRAM-SHA-256"),
    Mode("sasl_ssl-scram-sha-256", "SASL_SSL", "SCRAM-SHA-256"),
    Mode("sasl_ssl-scram-sha-512", "SASL_SSL", "SCRAM-SHA-512"),
]
MODE_NAMES = [m.name for m in MODES]


def parse_modes(value: str) -> list:
    """`all` or a comma-separated list of mode names, in the order given."""
    if value == "all":
        return list(MODE_NAMES)
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in MODE_NAMES]
    if unknown or not names:
        raise ValueError(f"unknown security mode {', '.join(unknown) or value!r} (known: all, {', '.join(MODE_NAMES)})")
    return names


def mode_named(name: str) -> Mode:
    return next(m for m in MODES if m.name == name)


def broker_properties(mode: Mode, pki: Pki) -> dict:
    """Kafka broker properties for the SECURE listener: the same on Shale and on Kafka."""
    props = {}
    if mode.tls:
        props.update({
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server_keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca),
        })
        if mode.client_auth:
            props["ssl.client.auth"] = "required"
    if mode.mechanism:
        prefix = f"listener.name.{LISTENER.lower()}.{mode.mechanism.lower()}."
        props["sasl.enabled.mechanisms"] = mode.mechanism
        if mode.mechanism == "PLAIN":
            users = " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
            props[prefix + "sasl.jaas.config"] = (
                f'{PLAIN_LOGIN_MODULE} required username="admin" password="{USERS["admin"]}" {users};')
        else:
            # SCRAM users live in the cluster's metadata (created after start); the entry only
            # names the login module, as Kafka requires one per enabled mechanism.
            props[prefix + "sasl.jaas.config"] = f"{SCRAM_LOGIN_MODULE} required;"
    return props


def client_settings(mode: Mode, pki: Pki, wrong: bool) -> dict:
    """The client's settings, neutral of any client library; `wrong` for auth_failure."""
    s = {"security_protocol": mode.protocol, "ca_file": None, "cert_file": None, "key_file": None,
         "keystore_file": None, "sasl_mechanism": mode.mechanism, "username": None, "password": None}
    if mode.tls:
        s["ca_file"] = str(pki.other_ca if wrong and not mode.mechanism and not mode.client_auth else pki.ca)
        if mode.client_auth:
            untrusted = wrong
            s["cert_file"] = str(pki.other_client_cert if untrusted else pki.client_cert)
            s["key_file"] = str(pki.other_client_key if untrusted else pki.client_key)
            s["keystore_file"] = str(pki.other_client_keystore if untrusted else pki.client_keystore)
    if mode.mechanism:
        s["username"] = CLIENT_USER
        s["password"] = WRONG_PASSWORD if wrong else USERS[CLIENT_USER]
    return s


def java_properties(s: dict) -> str:
    lines = [f"security.protocol={s['security_protocol']}"]
    if s["ca_file"]:
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={s['ca_file']}"]
    if s["keystore_file"]:
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={s['keystore_file']}"]
    if s["sasl_mechanism"]:
        module = PLAIN_LOGIN_MODULE if s["sasl_mechanism"] == "PLAIN" else SCRAM_LOGIN_MODULE
        lines += [f"sasl.mechanism={s['sasl_mechanism']}",
                  f'sasl.jaas.config={module} required username="{s["username"]}" password="{s["password"]}";']
    return "\n".join(lines) + "\n"


def librdkafka_properties(s: dict) -> str:
    lines = [f"security.protocol={s['security_protocol'].lower()}"]
    if s["ca_file"]:
        lines.append(f"ssl.ca.location={s['ca_file']}")
    if s["cert_file"]:
        lines += [f"ssl.certificate.location={s['cert_file']}", f"ssl.key.location={s['key_file']}"]
    if s["sasl_mechanism"]:
        lines += [f"sasl.mechanisms={s['sasl_mechanism']}", f"sasl.username={s['username']}",
                  f"sasl.password={s['password']}"]
    return "\n".join(lines) + "\n"


def write_client_files(mode: Mode, pki: Pki, directory: Path, wrong: bool) -> dict:
    """Writes the three client files; answers the environment variables naming them."""
    directory.mkdir(parents=True, exist_ok=True)
    s = client_settings(mode, pki, wrong)
    tag = "wrong" if wrong else "client"
    java = directory / f"{tag}.properties"
    java.write_text(java_properties(s))
    rdkafka = directory / f"{tag}.librdkafka.properties"
    rdkafka.write_text(librdkafka_properties(s))
    js = directory / f"{tag}.json"
    js.write_text(json.dumps(s, indent=2) + "\n")
    return {"COMPAT_SECURITY_MODE": mode.name, "COMPAT_SECURITY_JAVA": str(java),
            "COMPAT_SECURITY_LIBRDKAFKA": str(rdkafka), "COMPAT_SECURITY_JSON": str(js)}


def _config_command(kafka_lib: Path, bootstrap: str, *args, timeout_s=90):
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{kafka_lib}/*",
           "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)


def create_scram_users(mode: Mode, plaintext_bootstrap: str, kafka_lib: Path, timeout_s: float = 60):
    """Creates every user's credential for the mode's SCRAM mechanism through the PLAINTEXT
    listener with Kafka's ConfigCommand (AlterUserScramCredentials), then waits until the broker
    describes them (DescribeUserScramCredentials), i.e. until its metadata holds them."""
    for user, password in USERS.items():
        proc = _config_command(kafka_lib, plaintext_bootstrap, "--alter", "--add-config",
                               f"{mode.mechanism}=[iterations={SCRAM_ITERATIONS},password={password}]",
                               "--entity-type", "users", "--entity-name", user)
        if proc.returncode != 0:
            raise RuntimeError(f"kafka-configs could not create the {mode.mechanism} credential of {user}: "
                               f"{(proc.stderr or proc.stdout)[-800:]}")
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        proc = _config_command(kafka_lib, plaintext_bootstrap, "--describe", "--entity-type", "users")
        last = proc.stdout + proc.stderr
        if proc.returncode == 0 and all(
                f"SCRAM credential configs for user-principal '{user}' are {mode.mechanism}=iterations="
                f"{SCRAM_ITERATIONS}" in proc.stdout for user in USERS):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the broker did not describe the {mode.mechanism} credentials within {timeout_s}s: "
                       f"{last[-800:]}")
