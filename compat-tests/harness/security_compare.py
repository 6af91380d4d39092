#!/usr/bin/env python3
"""The security matrix against both brokers: each mode runs against Apache Kafka (the reference),
then against Shale, with the same broker properties and client files (harness/security.py); then
every client's AUTH_FAILURE line (what it reported for the wrong password, the untrusted client
certificate or the untrusted broker) must be the same on both.

    python3 compat-tests/harness/security_compare.py --security MODE[,MODE...]|all [--clients a,b] [--timeout N]

Prints each target's matrices, then per mode a table client | Kafka | Shale. Exits 1 when a
scenario fails on either broker or an AUTH_FAILURE line differs. Shale is the release build, or
SHALE_BIN. Results in compat-tests/results/security-compare.json.
"""

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402
import security  # noqa: E402

TARGETS = ("kafka", "shale")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--security", required=True, metavar="MODE[,MODE...]|all",
                        help="modes to compare: " + ", ".join(security.MODE_NAMES))
    parser.add_argument("--clients", help="comma-separated subset of: " + ",".join(run.CLIENTS))
    parser.add_argument("--scenarios", help="comma-separated subset of: " + ",".join(run.ALL_SCENARIO_NAMES))
    parser.add_argument("--no-build", action="store_true", help="do not run cargo build for Shale")
    parser.add_argument("--timeout", type=int, default=run.SCENARIO_TIMEOUT_S, help="seconds per scenario")
    args = parser.parse_args()

    def pick(value, universe, default, what):
        chosen = [v.strip() for v in value.split(",") if v.strip()] if value else list(default)
        unknown = [v for v in chosen if v not in universe]
        if unknown:
            parser.error(f"unknown {what}: {', '.join(unknown)}")
        return chosen

    args.client_list = pick(args.clients, list(run.CLIENTS), list(run.CLIENTS), "clients")
    args.scenario_list = pick(args.scenarios, run.ALL_SCENARIO_NAMES, run.SECURITY_SCENARIOS, "scenarios")
    try:
        args.mode_list = security.parse_modes(args.security)
    except ValueError as exc:
        parser.error(str(exc))
    args.bootstrap = None
    args.fast = False
    return args


def auth_lines(outcome):
    return {r["client"]: r.get("auth_failure") for r in outcome["results"] if r["scenario"] == "auth_failure"}


def main():
    args = parse_args()
    started = time.monotonic()
    kafka_version = run.install_for(args, "both")
    run.stop_on_signals()
    versions = {c: run.client_version(c) for c in args.client_list}
    outcomes = {t: [] for t in TARGETS}
    for mode_name in args.mode_list:
        for target in TARGETS:
            outcomes[target].append(run.run_security_mode(target, mode_name, args, kafka_version,
                                                          run.COMPAT_DIR / "results" / "logs" / f"{target}-security"))
    duration = time.monotonic() - started

    failed = False
    for target in TARGETS:
        print(f"\n===== {target} =====")
        counts = run.report_security(target, args, outcomes[target], versions, duration)
        failed |= counts["fail"] > 0

    comparison = []
    if "auth_failure" in args.scenario_list:
        for kafka_outcome, shale_outcome in zip(outcomes["kafka"], outcomes["shale"]):
            mode = kafka_outcome["mode"]
            kafka_lines, shale_lines = auth_lines(kafka_outcome), auth_lines(shale_outcome)
            print(f"\nAUTH_FAILURE, {mode} ({security.mode_named(mode).wrong_thing}):")
            for client in args.client_list:
                k, s = kafka_lines.get(client), shale_lines.get(client)
                if shale_outcome["start_error"]:
                    verdict = "shale did not start"
                elif k is None and s is None:
                    verdict = "none"  # n/a on both, or failed before reporting (see the matrices)
                else:
                    verdict = "same" if k == s else "DIFFERENT"
                failed |= verdict in ("DIFFERENT", "shale did not start")
                comparison.append({"mode": mode, "client": client, "kafka": k, "shale": s, "verdict": verdict})
                print(f"  {client:<16} {verdict:<20} kafka: {k}")
                if verdict != "same":
                    print(f"  {'':<16} {'':<20} shale: {s if s is not None else shale_outcome['start_error']}")

    report = {
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(duration, 1),
        "clients": versions,
        "comparison": comparison,
        "outcomes": outcomes,
    }
    (run.COMPAT_DIR / "results" / "security-compare.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\nresults written to compat-tests/results/security-compare.json")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
