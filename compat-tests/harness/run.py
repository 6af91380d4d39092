#!/usr/bin/env python3
"""Run every client's scenarios against one broker (Shale or Apache Kafka) and print a matrix.

Each (client, scenario) pair runs as its own process with a timeout. The process exits 0 for a
pass, 77 when the client cannot express the scenario (n/a), anything else for a failure; its
output is kept under results/logs/<target>/.

With --security MODE (or all) the broker gets a listener on that security protocol beside
PLAINTEXT (harness/security.py) and the clients connect to it: one broker per mode, a matrix per
mode and one of modes x clients; logs under results/logs/<target>-security/<mode>/.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import BrokerError, KafkaBroker, ShaleBroker, free_port  # noqa: E402
import security  # noqa: E402
from pki import make_pki  # noqa: E402

COMPAT_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = COMPAT_DIR.parent
DEPS = COMPAT_DIR / ".deps"
VENV_PY = COMPAT_DIR / ".venv" / "bin" / "python"
KAFKA_LIB = DEPS / "kafka" / "lib"
NOT_APPLICABLE_EXIT = 77

SCENARIOS = [
    ("metadata", "API version negotiation, cluster and topic metadata"),
    ("topics", "create / describe / add partitions / delete topics"),
    ("codecs", "produce+consume with none/gzip/snappy/lz4/zstd: keys, headers, timestamps, null values"),
    ("large", "records near message.max.bytes round-trip"),
    ("idempotent", "idempotent producer (acks=all) delivers once, in order"),
    ("group", "consumer group subscribe, commit, resume after restart"),
    ("rebalance", "partitions rebalance across two members and back"),
    ("static", "static membership (group.instance.id) keeps assignment across restart"),
    ("cooperative", "cooperative-sticky incremental rebalance"),
    ("offsets_for_times", "ListOffsets by timestamp, earliest and latest"),
    ("configs", "describe and alter topic configs"),
    ("delete_records", "DeleteRecords moves the log start offset"),
    ("consumer_lag", "committed offsets and lag through ConsumerGroupCommand"),
    ("errors", "unknown topic, record too large, invalid config error codes"),
    ("broker_configs", "dynamic broker configs (broker 1 and the cluster default): refused alters, read_only, effect on topics"),
    ("record_errors", "KIP-467: a refused batch names its bad records (keyless on compacted, timestamp out of range)"),
    ("recompression", "topic compression.type recompresses a producer's batches; records round-trip, the stored codec is the topic's"),
    ("transactions", "commit, abort, read_committed vs read_uncommitted, offsets sent to a transaction"),
    ("exactly_once", "read-process-write over two topics, killed (SIGKILL) and restarted: each record once"),
    ("wire44", "Kafka 4.4's newest request versions, sent and parsed by kafka-clients 4.4's own request classes"),
    ("cg848_join_consume", "KIP-848 (group.protocol=consumer): one member gets every partition; ConsumerGroupDescribe"),
    ("cg848_second_member", "KIP-848: a second member joins; only the moved partition is revoked"),
    ("cg848_leave", "KIP-848: a member leaves; its partitions move at once"),
    ("cg848_session_expiry", "KIP-848: a member is killed (SIGKILL); its partitions move after the session timeout"),
    ("cg848_static_restart", "KIP-848: a static member (group.instance.id) restarts and gets the same partitions"),
    ("cg848_regex", "KIP-848: a regex subscription picks up a topic created afterwards"),
    ("cg848_commit_resume", "KIP-848: commit, close, a new member resumes at the committed offsets"),
    ("cg848_mixed_migration", "KIP-848: a classic and a consumer member in one group (online upgrade and back)"),
    ("cg848_tools", "ConsumerGroupCommand on a KIP-848 consumer group: list by type and state, members, state, reset, delete"),
    ("share_three_consumers", "KIP-932 share group: three consumers share one partition; every record delivered once in all"),
    ("share_lock_expiry", "KIP-932: records of a consumer that stops polling, or is killed, go to another after the lock"),
    ("share_explicit_ack", "KIP-932 explicit acknowledgement: ACCEPT, RELEASE (redelivered, count 2), REJECT (never again)"),
    ("share_delivery_limit", "KIP-932: a record released up to group.share.delivery.count.limit times is archived"),
    ("share_restart", "KIP-932: the broker restarts; acknowledged records never come back, the others do"),
    ("share_renew", "KIP-1222: RENEW extends a record's acquisition lock past its duration"),
    ("share_assignment", "KIP-932: members join and leave one at a time; epochs and the partitions' spread over members"),
    ("share_group_configs", "KIP-932: a group's share.* configs described with their broker synonyms, Kafka's refusals"),
    ("share_group_types", "KIP-932: share and consumer groups of one id refuse each other's members and admin calls"),
    ("share_tools", "ShareGroupCommand (list, describe members/offsets/state, reset, delete) and ConsoleShareConsumer"),
    ("share_offsets", "ShareGroupCommand's --reset-offsets (--to-offset, --to-latest) and --delete-offsets"),
]
SCENARIO_NAMES = [name for name, _ in SCENARIOS]
# Named groups of scenarios for --scenarios (a group name expands to its members).
SCENARIO_GROUPS = {
    "cg848": [name for name in SCENARIO_NAMES if name.startswith("cg848_")],
    "share": [name for name in SCENARIO_NAMES if name.startswith("share_")],
}
# Scenarios of the security modes only (the clients answer n/a without a security mode).
SECURITY_ONLY_SCENARIOS = [
    ("auth_failure", "wrong password / untrusted client certificate / untrusted broker: the client's "
                     "authentication or SSL error (AUTH_FAILURE line, compared by security_compare.py)"),
]
ALL_SCENARIO_NAMES = SCENARIO_NAMES + [name for name, _ in SECURITY_ONLY_SCENARIOS]
SECURITY_SCENARIOS = ["metadata", "codecs", "group", "auth_failure"]


def python_client(script):
    return {"cmd": [str(VENV_PY), str(COMPAT_DIR / "python" / script)], "deps": ["venv"]}


CLIENTS = {
    "kcat": {**python_client("kcat_client.py"), "deps": ["venv", "kcat"]},
    "kafka-python": python_client("kafka_python_client.py"),
    "confluent-kafka": python_client("confluent_client.py"),
    "aiokafka": python_client("aiokafka_client.py"),
    "java": {
        "cmd": ["java", "-Xss4m", "-cp", f"{DEPS / 'java-classes'}:{KAFKA_LIB}/*", "Compat"],
        "deps": ["java"],
    },
    "cli": {**python_client("cli_client.py"), "deps": ["venv", "kafka"]},
    "franz-go": {"cmd": [str(DEPS / "go-bin" / "compat-franz")], "deps": ["go"]},
    "kafkajs": {"cmd": ["node", str(COMPAT_DIR / "node" / "compat.js")], "deps": ["node"]},
}

# Short names accepted by --clients.
CLIENT_ALIASES = {"confluent": ["confluent-kafka"], "franz": ["franz-go"]}

# Scenarios that only some clients run; the others report n/a with this reason.
ONLY_CLIENTS = {
    "consumer_lag": (["cli"], "lag is checked through Kafka's ConsumerGroupCommand (the cli client)"),
    "cg848_tools": (["cli"], "ConsumerGroupCommand is the cli client's"),
    "exactly_once": (["java"], "the read-process-write worker is the Java client (java/ExactlyOnce.java)"),
    "wire44": (["java"], "the requests are built and parsed by kafka-clients' own request classes (java/Wire44.java)"),
    "record_errors": (["confluent-kafka", "java", "kafka-python"],
                      "per-record errors are checked through librdkafka (confluent-kafka), the Java producer and kafka-python"),
    "broker_configs": (["java", "cli", "kafka-python", "confluent-kafka"],
                       "dynamic broker configs are checked through the Java AdminClient, ConfigCommand, kafka-python and "
                       "confluent-kafka"),
    "recompression": (["confluent-kafka", "java", "kafka-python"],
                      "the stored codec is checked with a raw Fetch beside confluent-kafka, the Java client and kafka-python"),
    **{name: (["java", "confluent-kafka", "franz-go"],
              "group.protocol=consumer (KIP-848) is checked with the Java client, confluent-kafka and franz-go; kcat's "
              "librdkafka 2.0.2, kafka-python, aiokafka and kafkajs have only the classic protocol")
       for name in SCENARIO_GROUPS["cg848"] if name != "cg848_tools"},
    "share_tools": (["cli"], "ShareGroupCommand and ConsoleShareConsumer are the cli client's"),
    "share_offsets": (["cli"], "ShareGroupCommand and ConsoleShareConsumer are the cli client's"),
    **{name: (["java", "confluent-kafka"],
              "share groups (KIP-932) are checked with the Java KafkaShareConsumer and confluent-kafka's ShareConsumer "
              "(librdkafka 2.16); kcat's librdkafka 2.0.2, kafka-python, aiokafka, franz-go and kafkajs have no share "
              "consumer")
       for name in SCENARIO_GROUPS["share"] if name not in ("share_tools", "share_offsets")},
    "share_assignment": (["java"], "the assignments are read with the Java AdminClient's DescribeShareGroups (confluent-kafka "
                                   "2.16 has none)"),
    "share_group_configs": (["java"], "a group's share configs are checked with the Java AdminClient"),
    "share_group_types": (["java"], "the refusals are checked with the Java share consumer, consumers and AdminClient"),
}

FAST_CLIENTS = ["kcat", "kafka-python", "java"]
FAST_SCENARIOS = ["metadata", "topics", "codecs", "large", "idempotent", "group",
                  "offsets_for_times", "configs", "errors", "broker_configs", "record_errors", "recompression",
                  "transactions", "exactly_once", "wire44",
                  # KIP-848 with the Java client (the fast slice's one consumer-protocol client), migration included.
                  "cg848_join_consume", "cg848_second_member", "cg848_static_restart", "cg848_regex",
                  "cg848_commit_resume", "cg848_mixed_migration",
                  # KIP-932 with the Java KafkaShareConsumer (kcat and kafka-python have none).
                  "share_three_consumers", "share_explicit_ack", "share_restart"]

SCENARIO_TIMEOUT_S = 150
STATUS_LABEL = {"pass": "pass", "fail": "FAIL", "n/a": "n/a", None: "-"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka"], default="shale")
    parser.add_argument("--fast", action="store_true", help="a CI-sized slice: a few clients, core scenarios")
    parser.add_argument("--clients", help="comma-separated subset of: " + ",".join(CLIENTS))
    parser.add_argument("--scenarios", help="comma-separated subset of: " + ",".join(ALL_SCENARIO_NAMES)
                        + "; or a group: " + ",".join(SCENARIO_GROUPS))
    parser.add_argument("--bootstrap", help="use an already running broker instead of starting one")
    parser.add_argument("--no-build", action="store_true", help="do not run cargo build for Shale")
    parser.add_argument("--timeout", type=int, default=SCENARIO_TIMEOUT_S, help="seconds per scenario")
    parser.add_argument("--security", metavar="MODE[,MODE...]|all",
                        help="connect the clients over these security modes' listeners, one broker per mode: "
                             + ", ".join(security.MODE_NAMES))
    args = parser.parse_args()
    if args.security and args.bootstrap:
        parser.error("--security starts the broker with its listener and users; it cannot use --bootstrap")

    def pick(value, universe, default, what, aliases):
        if not value:
            return list(default)
        chosen = []
        for v in (v.strip() for v in value.split(",") if v.strip()):
            for name in aliases.get(v, [v]):
                if name not in chosen:
                    chosen.append(name)
        unknown = [v for v in chosen if v not in universe]
        if unknown:
            parser.error(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(universe)})")
        return chosen

    args.client_list = pick(args.clients, list(CLIENTS), FAST_CLIENTS if args.fast else CLIENTS, "clients",
                            CLIENT_ALIASES)
    default_scenarios = SECURITY_SCENARIOS if args.security else FAST_SCENARIOS if args.fast else SCENARIO_NAMES
    args.scenario_list = pick(args.scenarios, ALL_SCENARIO_NAMES, default_scenarios, "scenarios", SCENARIO_GROUPS)
    try:
        args.mode_list = security.parse_modes(args.security) if args.security else []
    except ValueError as exc:
        parser.error(str(exc))
    return args


def install_deps(names):
    """Run harness/deps.sh for each needed installer (idempotent, cached in .deps)."""
    needed = []
    for name in names:
        if name not in needed:
            needed.append(name)
    result = subprocess.run(["bash", str(COMPAT_DIR / "harness" / "deps.sh"), *needed], timeout=3600)
    if result.returncode != 0:
        sys.exit(f"dependency installation failed for: {', '.join(needed)}")


def deps_var(name):
    out = subprocess.run(
        ["bash", "-c", f"source '{COMPAT_DIR}/harness/deps.sh' && echo ${name}"],
        capture_output=True, text=True, timeout=30,
    )
    return out.stdout.strip()


def build_shale():
    print("[compat] cargo build --release -p shale", flush=True)
    result = subprocess.run(["cargo", "build", "--release", "-p", "shale"], cwd=REPO_DIR, timeout=3600)
    if result.returncode != 0:
        sys.exit("cargo build --release -p shale failed")


def shale_binary() -> Path:
    # Absolute paths: the broker process runs in its own temporary directory.
    if os.environ.get("SHALE_BIN"):
        return Path(os.environ["SHALE_BIN"]).absolute()
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    if not target_dir.is_absolute():
        target_dir = REPO_DIR / target_dir  # cargo resolves it from where it runs: the repository
    return target_dir / "release" / "shale"


def client_version(client) -> str:
    try:
        out = subprocess.run(CLIENTS[client]["cmd"] + ["--version"], capture_output=True, text=True, timeout=60)
        text = out.stdout.strip().splitlines()
        return text[-1] if text else f"unknown ({out.stderr.strip()[-200:]})"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"


def serve_broker_requests(control_dir: Path, broker, handled: set, log_file):
    """The broker requests a scenario made: `restart-<n>.request` holding `term` (SIGTERM, the
    controlled shutdown) or `kill` (SIGKILL); each is answered once with `restart-<n>.done`
    holding `ok` or `error <why>`, written whole (a rename)."""
    for request in sorted(control_dir.glob("restart-*.request")):
        if request.name in handled:
            continue
        handled.add(request.name)
        how = request.read_text().strip()
        started = time.monotonic()
        try:
            if how not in ("term", "kill"):
                raise BrokerError(f"unknown restart request {how!r} (term or kill)")
            broker.restart(kill=how == "kill")
            answer = "ok"
        except (BrokerError, OSError, subprocess.SubprocessError) as exc:
            answer = f"error {exc}"
        log_file.write(f"[compat] broker restart ({how}) in {time.monotonic() - started:.1f}s: {answer}\n".encode())
        log_file.flush()
        done = request.with_suffix(".done")
        tmp = done.with_suffix(".tmp")
        tmp.write_text(answer + "\n")
        tmp.rename(done)


def wait_serving_broker(proc, timeout_s, control_dir, broker, log_file):
    """The client's exit code (None once `timeout_s` passed), restarting the broker whenever
    the scenario asks for it."""
    deadline = time.monotonic() + timeout_s
    handled = set()
    while True:
        try:
            return proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            return None
        if control_dir is not None:
            serve_broker_requests(control_dir, broker, handled, log_file)


def run_scenario(client, scenario, bootstrap, log_dir: Path, timeout_s, extra_env=None, broker=None):
    run_id = uuid.uuid4().hex[:8]
    prefix = f"compat-{client}-{scenario}-{run_id}".replace("_", "-")
    cmd = CLIENTS[client]["cmd"] + ["--bootstrap", bootstrap, "--scenario", scenario, "--prefix", prefix]
    log_path = log_dir / f"{client}.{scenario}.log"
    started = time.monotonic()
    env = dict(os.environ, COMPAT_KAFKA_LIB=str(KAFKA_LIB), PYTHONUNBUFFERED="1", **(extra_env or {}))
    # A scenario may ask the harness to restart the broker (share_restart) through files in this
    # folder; without a broker of its own (--bootstrap) there is none and such scenarios are n/a.
    control_dir = Path(tempfile.mkdtemp(prefix="compat-control-")) if broker is not None else None
    if control_dir is not None:
        env["COMPAT_BROKER_CONTROL"] = str(control_dir)
    # Read the output back through the same handle: another run may clear the log folder.
    with open(log_path, "w+b") as log_file:
        log_file.write(("$ " + " ".join(cmd) + "\n").encode())
        log_file.flush()
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        try:
            code = wait_serving_broker(proc, timeout_s, control_dir, broker, log_file)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            if control_dir is not None:
                shutil.rmtree(control_dir, ignore_errors=True)
        log_file.seek(0)
        output = log_file.read().decode(errors="replace")
    duration = time.monotonic() - started
    if code == 0:
        status, detail = "pass", ""
    elif code == NOT_APPLICABLE_EXIT:
        status = "n/a"
        detail = next((line[4:].strip() for line in output.splitlines() if line.startswith("N/A:")), "")
    else:
        status = "fail"
        # Keep the lines that say what failed: unindented ones (exception messages), not the
        # indented frames of Python/Java/Node stack traces.
        lines = [line for line in output.splitlines()[1:]
                 if line.strip() and not line[0].isspace() and not line.startswith("Traceback")]
        detail = ("timed out after %ds; " % timeout_s if code is None else f"exit {code}; ") + \
            " | ".join(lines[-4:])[-1200:]
    result = {"client": client, "scenario": scenario, "status": status,
              "duration_s": round(duration, 2), "detail": detail, "log": str(log_path.relative_to(COMPAT_DIR))}
    auth = [line[len("AUTH_FAILURE:"):].strip() for line in output.splitlines() if line.startswith("AUTH_FAILURE:")]
    if auth:
        result["auth_failure"] = auth[-1]
    return result


def print_matrix(results, clients, scenarios):
    by_key = {(r["client"], r["scenario"]): r["status"] for r in results}
    width = max(len(s) for s in scenarios) + 2
    col = max(10, max(len(c) for c in clients) + 2)
    print("\n" + "scenario".ljust(width) + "".join(c.ljust(col) for c in clients))
    print("-" * (width + col * len(clients)))
    for scenario in scenarios:
        cells = [STATUS_LABEL[by_key.get((c, scenario))].ljust(col) for c in clients]
        print(scenario.ljust(width) + "".join(cells))


def run_clients(clients, scenarios, bootstrap, log_dir, timeout_s, broker, env=None, wrong_env=None):
    """Every (client, scenario) in turn; `wrong_env` replaces `env` for auth_failure."""
    results = []
    for client in clients:
        for scenario in scenarios:
            only = ONLY_CLIENTS.get(scenario)
            if only and client not in only[0]:
                result = {"client": client, "scenario": scenario, "status": "n/a", "duration_s": 0,
                          "detail": only[1], "log": ""}
            elif broker is not None and not broker.alive():
                result = {"client": client, "scenario": scenario, "status": "fail", "duration_s": 0,
                          "detail": "broker is no longer running", "log": ""}
            else:
                result = run_scenario(client, scenario, bootstrap, log_dir, timeout_s,
                                      wrong_env if scenario == "auth_failure" and wrong_env else env, broker)
            results.append(result)
            print(f"[compat] {client:<16} {scenario:<18} {STATUS_LABEL[result['status']]:<5}"
                  f" {result['duration_s']:6.1f}s {result['detail'][:300]}", flush=True)
    return results


def new_broker(target, log_dir: Path, kafka_version):
    if target == "kafka":
        return KafkaBroker(log_dir / "broker.log", KAFKA_LIB, kafka_version)
    return ShaleBroker(log_dir / "broker.log", shale_binary())


def clear_logs(log_dir: Path):
    log_dir.mkdir(parents=True, exist_ok=True)
    for old in log_dir.glob("*.log"):
        old.unlink()


def install_for(args, target):
    deps = [d for c in args.client_list for d in CLIENTS[c]["deps"]]
    if (target in ("kafka", "both") and not args.bootstrap) or args.security:
        deps.append("kafka")  # the reference broker; security modes also need its ConfigCommand
    install_deps(deps)
    if target in ("shale", "both") and not args.bootstrap and not args.no_build and not os.environ.get("SHALE_BIN"):
        build_shale()
    return deps_var("KAFKA_VERSION")


def stop_on_signals():
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)


def start_error_line(text: str) -> str:
    """The line of a broker's start-up failure that says why (Shale's `Error: ...`, Kafka's
    exception), else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.lower().startswith("error") or "Exception:" in line:
            return line[:600]
    return lines[-1][:600] if lines else text[:600]


def run_security_mode(target, mode_name, args, kafka_version, log_root: Path):
    """One broker with the mode's listener; every client's scenarios against that listener."""
    mode = security.mode_named(mode_name)
    log_dir = log_root / mode.name
    clear_logs(log_dir)
    workdir = Path(tempfile.mkdtemp(prefix=f"compat-security-{mode.name}-"))
    broker = new_broker(target, log_dir, kafka_version)
    print(f"\n[compat] === {target} / {mode.name}: {mode.protocol}"
          f"{' ' + mode.mechanism if mode.mechanism else ''}{' with ssl.client.auth=required' if mode.client_auth else ''}"
          f"; auth_failure uses {mode.wrong_thing}", flush=True)
    outcome = {"mode": mode.name, "protocol": mode.protocol, "mechanism": mode.mechanism,
               "client_auth": mode.client_auth, "broker": broker.version, "start_error": None, "results": []}
    try:
        pki = make_pki(workdir / "pki")
        port = free_port()
        props = security.broker_properties(mode, pki)
        t0 = time.monotonic()
        try:
            broker.start(props, extra_listeners={security.LISTENER: (port, mode.protocol)})
            if mode.scram:
                security.create_scram_users(mode, broker.bootstrap, KAFKA_LIB)
        except (BrokerError, RuntimeError, subprocess.SubprocessError) as exc:
            # The reason is early in the log (a backtrace may follow it): read it all.
            try:
                logged = "\n".join(line for line in broker.log_path.read_text(errors="replace").splitlines()
                                    if not line.startswith("$ "))
            except OSError:
                logged = ""
            why = start_error_line(logged if broker.proc is not None and broker.proc.poll() is not None
                                   else str(exc))
            outcome["start_error"] = why
            print(f"[compat] {broker.name} did not start with {mode.name}: {why}", flush=True)
            outcome["results"] = [
                {"client": c, "scenario": s, "status": "fail", "duration_s": 0,
                 "detail": f"{broker.name} did not start with {mode.name}: {why}", "log": ""}
                for c in args.client_list for s in args.scenario_list]
            return outcome
        bootstrap = f"127.0.0.1:{port}"
        outcome["broker"] = broker.version
        outcome["bootstrap"] = bootstrap
        print(f"[compat] {broker.version} ready in {time.monotonic() - t0:.1f}s: PLAINTEXT at {broker.bootstrap}, "
              f"{mode.protocol} at {bootstrap}", flush=True)
        env = security.write_client_files(mode, pki, workdir / "clients", wrong=False)
        wrong_env = security.write_client_files(mode, pki, workdir / "clients", wrong=True)
        outcome["results"] = run_clients(args.client_list, args.scenario_list, bootstrap, log_dir, args.timeout,
                                         broker, env, wrong_env)
        return outcome
    finally:
        if not broker.alive() and broker.proc is not None and outcome["start_error"] is None:
            print(f"[compat] broker exited with code {broker.proc.returncode}; log tail:\n{broker.tail()}")
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def mode_status(results, client):
    statuses = [r["status"] for r in results if r["client"] == client]
    if not statuses:
        return None
    if "fail" in statuses:
        return "fail"
    return "pass" if "pass" in statuses else "n/a"


def print_mode_matrix(outcomes, clients):
    width = max(len(o["mode"]) for o in outcomes) + 2
    col = max(10, max(len(c) for c in clients) + 2)
    print("\n" + "mode".ljust(width) + "".join(c.ljust(col) for c in clients))
    print("-" * (width + col * len(clients)))
    for o in outcomes:
        print(o["mode"].ljust(width) + "".join(STATUS_LABEL[mode_status(o["results"], c)].ljust(col) for c in clients))


def run_security(target, args, kafka_version):
    """Every requested mode against `target`; answers the outcome of each mode."""
    log_root = COMPAT_DIR / "results" / "logs" / f"{target}-security"
    outcomes = []
    for mode_name in args.mode_list:
        outcomes.append(run_security_mode(target, mode_name, args, kafka_version, log_root))
    return outcomes


def report_security(target, args, outcomes, versions, duration):
    for o in outcomes:
        print(f"\n[{target} / {o['mode']}]" + (f" broker did not start: {o['start_error']}" if o["start_error"] else ""))
        print_matrix(o["results"], args.client_list, args.scenario_list)
    print_mode_matrix(outcomes, args.client_list)
    print("\nclient versions:")
    for client, version in versions.items():
        print(f"  {client:<16} {version}")
    results = [r for o in outcomes for r in o["results"]]
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("pass", "fail", "n/a")}
    print(f"\n{target}: {counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} n/a in {duration:.0f}s")
    failures = [(o["mode"], r) for o in outcomes for r in o["results"] if r["status"] == "fail"]
    if failures:
        print("\nfailures (full output under compat-tests/results/logs/):")
        for mode, r in failures:
            print(f"  {mode} / {r['client']} / {r['scenario']}: {r['detail'][:600]}")
    report = {
        "target": target,
        "security": True,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(duration, 1),
        "clients": versions,
        "scenarios": dict(s for s in SCENARIOS + SECURITY_ONLY_SCENARIOS if s[0] in args.scenario_list),
        "summary": counts,
        "modes": outcomes,
    }
    (COMPAT_DIR / "results" / f"{target}-security.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"results written to compat-tests/results/{target}-security.json")
    return counts


def main():
    args = parse_args()
    target = args.against
    results_dir = COMPAT_DIR / "results"
    log_dir = results_dir / "logs" / target
    started_wall = time.monotonic()
    kafka_version = install_for(args, target)
    stop_on_signals()

    if args.security:
        versions = {c: client_version(c) for c in args.client_list}
        outcomes = run_security(target, args, kafka_version)
        counts = report_security(target, args, outcomes, versions, time.monotonic() - started_wall)
        sys.exit(1 if counts["fail"] or not any(o["results"] for o in outcomes) else 0)

    clear_logs(log_dir)
    broker = None
    results = []
    try:
        if args.bootstrap:
            bootstrap, broker_version = args.bootstrap, f"external broker at {args.bootstrap}"
        else:
            broker = new_broker(target, log_dir, kafka_version)
            print(f"[compat] starting {broker.name} ...", flush=True)
            t0 = time.monotonic()
            try:
                broker.start()
            except BrokerError as exc:
                sys.exit(f"[compat] could not start {broker.name}: {exc}")
            bootstrap, broker_version = broker.bootstrap, broker.version
            print(f"[compat] {broker_version} ready at {bootstrap} in {time.monotonic() - t0:.1f}s", flush=True)

        versions = {c: client_version(c) for c in args.client_list}
        results = run_clients(args.client_list, args.scenario_list, bootstrap, log_dir, args.timeout, broker)
    finally:
        if broker is not None:
            if not broker.alive() and broker.proc is not None:
                print(f"[compat] broker exited with code {broker.proc.returncode}; log tail:\n{broker.tail()}")
            broker.stop()

    duration = time.monotonic() - started_wall
    print_matrix(results, args.client_list, args.scenario_list)
    print(f"\nbroker: {broker_version}")
    print("client versions:")
    for client, version in versions.items():
        print(f"  {client:<16} {version}")
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("pass", "fail", "n/a")}
    print(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} n/a in {duration:.0f}s")
    failures = [r for r in results if r["status"] == "fail"]
    if failures:
        print("\nfailures (full output under compat-tests/results/logs/):")
        for r in failures:
            print(f"  {r['client']} / {r['scenario']}: {r['detail'][:600]}")

    report = {
        "target": target,
        "broker": broker_version,
        "bootstrap": bootstrap,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(duration, 1),
        "fast": args.fast,
        "clients": versions,
        "scenarios": dict(s for s in SCENARIOS if s[0] in args.scenario_list),
        "summary": counts,
        "results": results,
    }
    (results_dir / f"{target}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"results written to compat-tests/results/{target}.json")
    sys.exit(1 if failures or not results else 0)


if __name__ == "__main__":
    main()
