"""Share groups (KIP-932) through Kafka's command-line tools: ShareGroupCommand
(kafka-share-groups.sh) and ConsoleShareConsumer (kafka-console-share-consumer.sh).

`cli` is the cli_client module: its `tool`, `create_topic`, `verifiable_produce`, `configs_cmd`,
QUIET_LOG4J, LIB and TOOLS.
"""

import queue
import re
import subprocess
import threading
import time

from common import check, check_eq, log

SHARE_GROUP_COMMAND = "consumer.group.ShareGroupCommand"
CONSOLE_SHARE_CONSUMER = "consumer.ConsoleShareConsumer"
# Each record as the console share consumer prints it with these formatter properties.
RECORD_LINE = re.compile(r"^Offset:(\d+)\tDelivery:(\d+)\t(.*)$")
FORMAT = ["--formatter-property", "print.offset=true", "--formatter-property", "print.delivery=true"]


def records(out):
    """(offset, delivery count, value) of each record line the console share consumer printed."""
    found = []
    for line in out.splitlines():
        m = RECORD_LINE.match(line)
        if m:
            found.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return found


def table(out, group):
    """The header and the rows of `group` in a ShareGroupCommand table (blank-separated columns;
    the header is the line starting with GROUP)."""
    lines = [line for line in out.splitlines() if line.strip()]
    header = next((line.split() for line in lines if line.split()[:1] == ["GROUP"]), None)
    check(header is not None, f"a table header in {out!r}")
    return header, [line.split() for line in lines if line.split()[:1] == [group]]


class Background:
    """A continual ConsoleShareConsumer whose printed records are read on a thread."""

    def __init__(self, cli, ctx, topic, group, client_id):
        cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={cli.QUIET_LOG4J}",
               "-cp", f"{cli.LIB}/*", cli.TOOLS + CONSOLE_SHARE_CONSUMER, "--bootstrap-server", ctx.bootstrap,
               "--topic", topic, "--group", group, "--command-property", f"client.id={client_id}", *FORMAT,
               *cli.security_args([])]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.err = []

        def pump(stream, sink):
            for line in stream:
                sink(line.rstrip("\n"))
        threading.Thread(target=pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=pump, args=(self.proc.stderr, self.err.append), daemon=True).start()

    def read(self, count, timeout_s=40):
        got = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            got.extend(records(line))
        check_eq(len(got), count, f"records the background share consumer printed ({got}; stderr {self.err[-5:]})")
        return got

    def stop(self):
        """SIGTERM: its shutdown hook closes the consumer, which leaves the group."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def wait_for(what, probe, timeout_s=30):
    """Runs `probe` until it answers a true value (answered), or fails with its last output."""
    deadline = time.monotonic() + timeout_s
    while True:
        ok, seen = probe()
        if ok:
            return seen
        check(time.monotonic() < deadline, f"{what}: {seen!r}")
        time.sleep(0.5)


def scenario_share_tools(ctx, cli):
    """ShareGroupCommand --list / --describe (--offsets, --members, --state, --verbose) /
    --reset-offsets / --delete and ConsoleShareConsumer on a share group, with Kafka 4.4's texts
    and table columns."""
    topic, group = ctx.topic(), ctx.group()
    sg = (SHARE_GROUP_COMMAND, "--bootstrap-server", ctx.bootstrap)
    cli.create_topic(ctx, topic, 1)
    cli.verifiable_produce(ctx, topic, 10, "")
    _, out, _ = cli.configs_cmd(ctx, "--entity-type", "groups", "--entity-name", group, "--alter",
                                "--add-config", "share.auto.offset.reset=earliest")
    check(f"Completed updating config for group {group}." in out, f"group config set: {out!r}")

    # A group's configs do not make the group.
    _, out, err = cli.tool(*sg, "--describe", "--group", group)
    check(f"Error: Executing share group command failed due to org.apache.kafka.common.errors."
          f"GroupIdNotFoundException: Group {group} not found." in out, f"describing a group before it exists: {out!r}")

    _, out, err = cli.tool(CONSOLE_SHARE_CONSUMER, "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                           "--group", group, "--max-messages", "10", "--timeout-ms", "30000", *FORMAT, timeout=90)
    check_eq(records(out), [(i, 1, str(i)) for i in range(10)], "the console share consumer's records")
    check("Processed a total of 10 messages" in err, f"its count: {err!r}")

    _, out, _ = cli.tool(*sg, "--describe", "--group", group)
    header, rows = table(out, group)
    check_eq(header, ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], "--describe (--offsets) columns")
    check_eq(len(rows), 1, f"one partition row: {out!r}")
    row = dict(zip(header, rows[0]))
    check_eq((row["TOPIC"], row["PARTITION"], row["LAG"]), (topic, "0", "0"), "TOPIC, PARTITION, LAG once all 10 are accepted")
    log(f"START-OFFSET once all 10 are accepted: {row['START-OFFSET']}")
    _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--offsets", "--verbose")
    header, rows = table(out, group)
    check_eq(header, ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"], "--offsets --verbose columns")
    check_eq(dict(zip(header, rows[0]))["LEADER-EPOCH"], "0", "LEADER-EPOCH")

    member = Background(cli, ctx, topic, group, f"{ctx.prefix}-member")
    try:
        def one_member():
            _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--members")
            if "GROUP" not in out:
                return False, out
            header, rows = table(out, group)
            return len(rows) == 1 and rows[0][-1] == f"{topic}:0", (header, rows, out)
        header, rows, _ = wait_for("one member assigned the partition", one_member)
        check_eq(header, ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"], "--members columns")
        row = dict(zip(header, rows[0]))
        check_eq((row["HOST"], row["CLIENT-ID"], row["#PARTITIONS"]), ("/127.0.0.1", f"{ctx.prefix}-member", "1"),
                 "HOST, CLIENT-ID, #PARTITIONS")
        _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--members", "--verbose")
        header, rows = table(out, group)
        check_eq(header, ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"],
                 "--members --verbose columns")
        check(rows and rows[0][header.index("MEMBER-EPOCH")].isdigit(), f"MEMBER-EPOCH: {out!r}")

        _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--state")
        check(re.search(rf"^{re.escape(group)}\s+127\.0\.0\.1:\d+\s+\(1\)\s+Stable\s+1\s*$", out, re.M),
              f"--state: coordinator, Stable, 1 member: {out!r}")
        check_eq(table(out, group)[0], ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"], "--state columns")
        _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--state", "--verbose")
        check_eq(table(out, group)[0], ["GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH",
                                        "#MEMBERS"], "--state --verbose columns")
        state = re.search(rf"^{re.escape(group)}\s+\S+\s+\(1\)\s+Stable\s+(\d+)\s+(\d+)\s+1\s*$", out, re.M)
        check(state is not None, f"--state --verbose row: {out!r}")
        check_eq(state.group(1), state.group(2), "GROUP-EPOCH and ASSIGNMENT-EPOCH")

        _, out, _ = cli.tool(*sg, "--list")
        check(group in out.split(), f"--list names the group: {out!r}")
        _, out, _ = cli.tool(*sg, "--list", "--state", "Stable")
        header, rows = table(out, group)
        check_eq((header, rows), (["GROUP", "STATE"], [[group, "Stable"]]), "--list --state Stable")
        _, out, _ = cli.tool(*sg, "--list", "--state", "Empty")
        check_eq(table(out, group)[1], [], "a Stable group is not listed as Empty")

        code, out, err = cli.tool(*sg, "--group", group, "--reset-offsets", "--to-earliest", "--topic", topic,
                                  "--execute", ok=False)
        check(code != 0 and f"Share group '{group}' is not empty." in out + err,
              f"reset refused while the group has a member: exit {code}, {out + err!r}")
        _, out, _ = cli.tool(*sg, "--delete", "--group", group)
        check(f"* Group '{group}' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: "
              f"Share group '{group}' is not EMPTY." in out, f"delete refused while the group has a member: {out!r}")

        cli.verifiable_produce(ctx, topic, 3, "")
        check_eq(member.read(3), [(10, 1, "0"), (11, 1, "1"), (12, 1, "2")], "the member gets the records produced meanwhile")
    finally:
        member.stop()

    def empty():
        _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--state")
        return re.search(rf"^{re.escape(group)}\s+\S+\s+\(1\)\s+Empty\s+0\s*$", out, re.M) is not None, out
    wait_for("the group is Empty once its member left", empty)
    _, out, err = cli.tool(*sg, "--describe", "--group", group, "--members")
    check(f"Share group '{group}' has no active members." in out + err, f"--members of an empty group: {out + err!r}")

    for mode in ("--dry-run", "--execute"):
        _, out, _ = cli.tool(*sg, "--group", group, "--reset-offsets", "--to-earliest", "--topic", topic, mode)
        header, rows = table(out, group)
        check_eq((header, rows), (["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[group, topic, "0", "0"]]),
                 f"--reset-offsets --to-earliest {mode}")
    _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--offsets")
    header, rows = table(out, group)
    check_eq([dict(zip(header, r)) for r in rows],
             [{"GROUP": group, "TOPIC": topic, "PARTITION": "0", "START-OFFSET": "0", "LAG": "13"}],
             "offsets after the reset")
    _, out, err = cli.tool(CONSOLE_SHARE_CONSUMER, "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                           "--group", group, "--max-messages", "13", "--timeout-ms", "30000", *FORMAT, timeout=90)
    check_eq(records(out), [(i, 1, str(i % 10)) for i in range(13)], "every record again, as never delivered, after the reset")

    _, out, _ = cli.tool(*sg, "--delete", "--group", group)
    check(f"Deletion of requested share groups ('{group}') was successful." in out, f"group deleted: {out!r}")
    _, out, _ = cli.tool(*sg, "--list")
    check(group not in out.split(), "the deleted group is no longer listed")
    _, out, _ = cli.tool(*sg, "--delete", "--group", group)
    check(f"* Group '{group}' could not be deleted due to: org.apache.kafka.common.errors.GroupIdNotFoundException: "
          f"Group '{group}' is not a share group." in out, f"deleting it again: {out!r}")


def scenario_share_offsets(ctx, cli):
    """ShareGroupCommand's offset commands (AlterShareGroupOffsets, DeleteShareGroupOffsets):
    --reset-offsets --to-offset on a group that does not exist yet makes it, --to-latest,
    --delete-offsets (the group then starts again by its share.auto.offset.reset) and its
    answer for a topic that does not exist."""
    topic, group = ctx.topic(), ctx.group()
    sg = (SHARE_GROUP_COMMAND, "--bootstrap-server", ctx.bootstrap)
    cli.create_topic(ctx, topic, 1)
    cli.verifiable_produce(ctx, topic, 10, "")
    cli.configs_cmd(ctx, "--entity-type", "groups", "--entity-name", group, "--alter",
                    "--add-config", "share.auto.offset.reset=earliest")

    def offsets():
        _, out, _ = cli.tool(*sg, "--describe", "--group", group, "--offsets")
        header, rows = table(out, group)
        check_eq(header, ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], "--offsets columns")
        return [(r[header.index("START-OFFSET")], r[header.index("LAG")]) for r in rows]

    def reset(*spec):
        _, out, _ = cli.tool(*sg, "--group", group, "--reset-offsets", *spec, "--topic", topic, "--execute")
        header, rows = table(out, group)
        check_eq(header, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], "--reset-offsets columns")
        return rows

    def consume(count):
        _, out, _ = cli.tool(CONSOLE_SHARE_CONSUMER, "--bootstrap-server", ctx.bootstrap, "--topic", topic, "--group",
                             group, "--max-messages", str(count), "--timeout-ms", "30000", *FORMAT, timeout=90)
        return records(out)

    check_eq(reset("--to-offset", "4"), [[group, topic, "0", "4"]], "--to-offset 4 on a group that does not exist yet")
    check_eq(offsets(), [("4", "6")], "START-OFFSET and LAG after --to-offset 4")
    check_eq(consume(6), [(i, 1, str(i)) for i in range(4, 10)], "records from offset 4")
    check_eq([lag for _, lag in offsets()], ["0"], "LAG once 4..9 are accepted")
    check_eq(reset("--to-latest"), [[group, topic, "0", "10"]], "--to-latest")
    check_eq(offsets(), [("10", "0")], "START-OFFSET and LAG after --to-latest")

    _, out, _ = cli.tool(*sg, "--group", group, "--delete-offsets", "--topic", topic)
    check(re.search(r"^TOPIC\s+STATUS\s*$", out, re.M) and re.search(rf"^{re.escape(topic)}\s+Successful\s*$", out, re.M),
          f"--delete-offsets: {out!r}")
    _, out, err = cli.tool(*sg, "--describe", "--group", group, "--offsets")
    check(f"Share group '{group}' has no offset information." in out + err, f"--offsets once deleted: {out + err!r}")
    missing = ctx.topic("missing")
    _, out, _ = cli.tool(*sg, "--group", group, "--delete-offsets", "--topic", missing)
    check(re.search(rf"^{re.escape(missing)}\s+Error: This server does not host this topic-partition\.\s*$", out, re.M),
          f"--delete-offsets of a topic that does not exist: {out!r}")
    check_eq(consume(10), [(i, 1, str(i)) for i in range(10)], "every record again: the group starts at the earliest once more")
    _, out, _ = cli.tool(*sg, "--delete", "--group", group)
    check(f"Deletion of requested share groups ('{group}') was successful." in out, f"group deleted: {out!r}")
