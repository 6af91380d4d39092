//! The broker's static configuration keys: Kafka's names, types and defaults.
//!
//! One table so that parsing, validation and DescribeConfigs for the broker resource all read the
//! same facts. Keys Kafka has but Shale does not act on (thread pools sized for the JVM, JMX, ...)
//! are listed as `Accepted` so a Kafka properties file starts without a flood of warnings.

/// The value type of a configuration key, as Kafka's `ConfigDef.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigKind {
    Boolean,
    Int,
    Long,
    Short,
    Double,
    String,
    List,
    Password,
    Class,
}

impl ConfigKind {
    /// The code DescribeConfigs v3+ reports in `config_type`.
    pub fn describe_code(self) -> i8 {
        match self {
            ConfigKind::Boolean => 1,
            ConfigKind::String => 2,
            ConfigKind::Int => 3,
            ConfigKind::Short => 4,
            ConfigKind::Long => 5,
            ConfigKind::Double => 6,
            ConfigKind::List => 7,
            ConfigKind::Class => 8,
            ConfigKind::Password => 9,
        }
    }
}

/// Whether Shale acts on a key or only accepts it for compatibility.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Honoured {
    Yes,
    Accepted,
}

/// One broker configuration key.
#[derive(Clone, Copy, Debug)]
pub struct BrokerConfigDef {
    pub name: &'static str,
    pub kind: ConfigKind,
    /// `None` means Kafka's default is null (no value).
    pub default: Option<&'static str>,
    /// Inclusive lower bound for numeric keys.
    pub min: Option<i64>,
    /// Inclusive upper bound for numeric keys.
    pub max: Option<i64>,
    pub honoured: Honoured,
}

const fn def(
    name: &'static str,
    kind: ConfigKind,
    default: Option<&'static str>,
    min: Option<i64>,
) -> BrokerConfigDef {
    BrokerConfigDef {
        name,
        kind,
        default,
        min,
        max: None,
        honoured: Honoured::Yes,
    }
}

/// A numeric key with Kafka's `between(min, max)`.
const fn between(
    name: &'static str,
    kind: ConfigKind,
    default: &'static str,
    min: i64,
    max: i64,
) -> BrokerConfigDef {
    let mut d = def(name, kind, Some(default), Some(min));
    d.max = Some(max);
    d
}

const fn accepted(
    name: &'static str,
    kind: ConfigKind,
    default: Option<&'static str>,
) -> BrokerConfigDef {
    BrokerConfigDef {
        name,
        kind,
        default,
        min: None,
        max: None,
        honoured: Honoured::Accepted,
    }
}

/// An accepted key that still gets Kafka's lower bound, so a value Kafka refuses is refused.
const fn accepted_at_least(
    name: &'static str,
    kind: ConfigKind,
    default: &'static str,
    min: i64,
) -> BrokerConfigDef {
    let mut d = accepted(name, kind, Some(default));
    d.min = Some(min);
    d
}

use ConfigKind::*;

/// Shale's broker keys with Kafka 4.x defaults. `listeners` and `log.dirs` default to the
/// single-node development values the README promises (Kafka's own defaults need a format step).
pub const BROKER_CONFIGS: &[BrokerConfigDef] = &[
    def("node.id", Int, Some("1"), Some(0)),
    def("broker.id", Int, None, Some(0)),
    def("process.roles", List, Some("broker,controller"), None),
    def("listeners", List, Some("PLAINTEXT://127.0.0.1:9092"), None),
    def("advertised.listeners", List, None, None),
    // Kafka types it STRING; its default lacks CONTROLLER, which Shale's single node needs.
    def(
        "listener.security.protocol.map",
        String,
        Some("CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
        None,
    ),
    def("inter.broker.listener.name", String, None, None),
    def("controller.listener.names", List, Some("CONTROLLER"), None),
    def("controller.quorum.voters", List, Some(""), None),
    def("controller.quorum.bootstrap.servers", List, Some(""), None),
    def("controller.quorum.election.timeout.ms", Int, Some("1000"), Some(1)),
    def("controller.quorum.fetch.timeout.ms", Int, Some("2000"), Some(1)),
    def("broker.rack", String, None, None),
    def("log.dirs", List, None, None),
    def("log.dir", List, Some("./data"), None),
    def("metadata.log.dir", String, None, None),
    def("num.partitions", Int, Some("1"), Some(1)),
    def("default.replication.factor", Int, Some("1"), Some(1)),
    def("auto.create.topics.enable", Boolean, Some("true"), None),
    def("delete.topic.enable", Boolean, Some("true"), None),
    def("message.max.bytes", Int, Some("1048588"), Some(0)),
    // Kafka's default is 2147483639; Shale's bound is 64 MiB (see the topic config).
    def("max.decompressed.message.bytes", Int, Some("67108864"), Some(1)),
    def("socket.request.max.bytes", Int, Some("104857600"), Some(1)),
    def("max.connections", Int, Some("2147483647"), Some(0)),
    def("max.connections.per.ip", Int, Some("2147483647"), Some(0)),
    def("max.connections.per.ip.overrides", String, Some(""), None),
    def("queued.max.requests", Int, Some("500"), Some(1)),
    // Negative turns idle expiry off, as in Kafka's selector.
    def("connections.max.idle.ms", Long, Some("600000"), None),
    def("connection.failed.authentication.delay.ms", Int, Some("100"), Some(0)),
    def("log.segment.bytes", Int, Some("1073741824"), Some(1_048_576)),
    def("log.roll.ms", Long, None, Some(1)),
    def("log.roll.hours", Int, Some("168"), Some(1)),
    def("log.retention.ms", Long, None, Some(-1)),
    def("log.retention.minutes", Int, None, Some(-1)),
    def("log.retention.hours", Int, Some("168"), Some(-1)),
    def("log.retention.bytes", Long, Some("-1"), Some(-1)),
    def("log.retention.check.interval.ms", Long, Some("300000"), Some(1)),
    def("log.cleanup.policy", List, Some("delete"), None),
    def("log.cleaner.enable", Boolean, Some("true"), None),
    def("log.cleaner.backoff.ms", Long, Some("15000"), Some(0)),
    def("log.cleaner.delete.retention.ms", Long, Some("86400000"), Some(0)),
    def("log.cleaner.min.compaction.lag.ms", Long, Some("0"), Some(0)),
    def("log.cleaner.max.compaction.lag.ms", Long, Some("9223372036854775807"), Some(1)),
    def("log.cleaner.min.cleanable.ratio", Double, Some("0.5"), None),
    def("log.index.interval.bytes", Int, Some("4096"), Some(0)),
    def("log.index.size.max.bytes", Int, Some("10485760"), Some(4)),
    def("log.flush.interval.messages", Long, Some("9223372036854775807"), Some(1)),
    def("log.flush.interval.ms", Long, None, Some(0)),
    def("log.flush.scheduler.interval.ms", Long, Some("9223372036854775807"), Some(0)),
    def("log.segment.delete.delay.ms", Long, Some("60000"), Some(0)),
    def("log.message.timestamp.type", String, Some("CreateTime"), None),
    def("log.message.timestamp.before.max.ms", Long, Some("9223372036854775807"), Some(0)),
    def("log.message.timestamp.after.max.ms", Long, Some("3600000"), Some(0)),
    def("log.preallocate", Boolean, Some("false"), None),
    def("num.recovery.threads.per.data.dir", Int, Some("2"), Some(1)),
    def("min.insync.replicas", Int, Some("1"), Some(1)),
    def("unclean.leader.election.enable", Boolean, Some("false"), None),
    // Client quotas' sampling (Kafka's QuotaConfig).
    def("quota.window.num", Int, Some("11"), Some(1)),
    def("quota.window.size.seconds", Int, Some("1"), Some(1)),
    def("controller.quota.window.num", Int, Some("11"), Some(1)),
    def("controller.quota.window.size.seconds", Int, Some("1"), Some(1)),
    def("replica.lag.time.max.ms", Long, Some("30000"), Some(1)),
    def("replica.fetch.wait.max.ms", Int, Some("500"), Some(0)),
    def("replica.fetch.min.bytes", Int, Some("1"), Some(0)),
    def("replica.fetch.max.bytes", Int, Some("1048576"), Some(0)),
    def("replica.fetch.response.max.bytes", Int, Some("10485760"), Some(0)),
    def("replica.fetch.backoff.ms", Int, Some("1000"), Some(0)),
    def("replica.socket.timeout.ms", Int, Some("30000"), Some(1)),
    def("replica.high.watermark.checkpoint.interval.ms", Long, Some("5000"), Some(1)),
    def("num.replica.fetchers", Int, Some("1"), Some(1)),
    def("auto.leader.rebalance.enable", Boolean, Some("true"), None),
    def("leader.imbalance.check.interval.seconds", Long, Some("300"), Some(1)),
    def("broker.session.timeout.ms", Int, Some("9000"), Some(1)),
    def("broker.heartbeat.interval.ms", Int, Some("2000"), Some(1)),
    def("offsets.topic.num.partitions", Int, Some("50"), Some(1)),
    def("offsets.topic.replication.factor", Short, Some("3"), Some(1)),
    def("offsets.topic.segment.bytes", Int, Some("104857600"), Some(1)),
    def("offsets.retention.minutes", Int, Some("10080"), Some(1)),
    def("offsets.retention.check.interval.ms", Long, Some("600000"), Some(1)),
    def("offsets.commit.timeout.ms", Int, Some("5000"), Some(1)),
    def("offsets.load.buffer.size", Int, Some("5242880"), Some(1)),
    def("offset.metadata.max.bytes", Int, Some("4096"), Some(0)),
    def("transaction.state.log.num.partitions", Int, Some("50"), Some(1)),
    def("transaction.state.log.replication.factor", Short, Some("3"), Some(1)),
    def("transaction.state.log.min.isr", Int, Some("2"), Some(1)),
    def("transaction.state.log.segment.bytes", Int, Some("104857600"), Some(1)),
    def("transaction.max.timeout.ms", Int, Some("900000"), Some(1)),
    def("transactional.id.expiration.ms", Int, Some("604800000"), Some(1)),
    def("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, Some("10000"), Some(1)),
    def("transaction.remove.expired.transaction.cleanup.interval.ms", Int, Some("3600000"), Some(1)),
    def("transaction.partition.verification.enable", Boolean, Some("true"), None),
    def("producer.id.expiration.ms", Int, Some("86400000"), Some(1)),
    def("group.initial.rebalance.delay.ms", Int, Some("3000"), Some(0)),
    def("group.min.session.timeout.ms", Int, Some("6000"), Some(0)),
    def("group.max.session.timeout.ms", Int, Some("1800000"), Some(0)),
    def("group.max.size", Int, Some("2147483647"), Some(1)),
    // The consumer group protocol (KIP-848); checked against each other in consumer_groups.rs.
    def("group.consumer.session.timeout.ms", Int, Some("45000"), Some(1)),
    def("group.consumer.min.session.timeout.ms", Int, Some("45000"), Some(1)),
    def("group.consumer.max.session.timeout.ms", Int, Some("60000"), Some(1)),
    def("group.consumer.heartbeat.interval.ms", Int, Some("5000"), Some(1)),
    def("group.consumer.min.heartbeat.interval.ms", Int, Some("5000"), Some(1)),
    def("group.consumer.max.heartbeat.interval.ms", Int, Some("15000"), Some(1)),
    def("group.consumer.max.size", Int, Some("2147483647"), Some(1)),
    def("group.consumer.assignment.interval.ms", Int, Some("1000"), Some(0)),
    def("group.consumer.min.assignment.interval.ms", Int, Some("0"), Some(0)),
    def("group.consumer.max.assignment.interval.ms", Int, Some("15000"), Some(0)),
    def("group.consumer.assignors", List, Some("uniform,range"), None),
    // Kafka's default: live groups convert both ways between the classic and consumer
    // protocols.
    def("group.consumer.migration.policy", String, Some("bidirectional"), None),
    // Share groups (KIP-932): GroupCoordinatorConfig's and ShareGroupConfig's keys, checked
    // against each other in share_groups.rs. Kafka 4.4 enables share groups by the share.version
    // feature; `group.share.enable` is gone.
    def("group.share.session.timeout.ms", Int, Some("45000"), Some(1)),
    def("group.share.min.session.timeout.ms", Int, Some("45000"), Some(1)),
    def("group.share.max.session.timeout.ms", Int, Some("60000"), Some(1)),
    def("group.share.heartbeat.interval.ms", Int, Some("5000"), Some(1)),
    def("group.share.min.heartbeat.interval.ms", Int, Some("5000"), Some(1)),
    def("group.share.max.heartbeat.interval.ms", Int, Some("15000"), Some(1)),
    between("group.share.max.size", Int, "200", 1, 1000),
    def("group.share.assignors", List, Some("simple"), None),
    def("group.share.assignment.interval.ms", Int, Some("1000"), Some(0)),
    def("group.share.min.assignment.interval.ms", Int, Some("0"), Some(0)),
    def("group.share.max.assignment.interval.ms", Int, Some("15000"), Some(0)),
    between("group.share.delivery.count.limit", Int, "5", 2, 10),
    between("group.share.max.delivery.count.limit", Int, "10", 5, 25),
    between("group.share.min.delivery.count.limit", Int, "2", 2, 5),
    between("group.share.record.lock.duration.ms", Int, "30000", 1000, 3_600_000),
    between("group.share.min.record.lock.duration.ms", Int, "15000", 1000, 30000),
    between("group.share.max.record.lock.duration.ms", Int, "60000", 30000, 3_600_000),
    between("group.share.partition.max.record.locks", Int, "2000", 100, 10000),
    between("group.share.max.partition.max.record.locks", Int, "4000", 2000, 10000),
    between("group.share.min.partition.max.record.locks", Int, "100", 100, 2000),
    def("group.share.max.share.sessions", Int, Some("2000"), Some(1)),
    // Shale's share fetches wait without a purgatory to purge.
    accepted("share.fetch.purgatory.purge.interval.requests", Int, Some("1000")),
    // The share coordinator over `__share_group_state` (Kafka's ShareCoordinatorConfig).
    def("share.coordinator.state.topic.num.partitions", Int, Some("50"), Some(1)),
    def("share.coordinator.state.topic.replication.factor", Short, Some("3"), Some(1)),
    def("share.coordinator.state.topic.min.isr", Short, Some("2"), Some(1)),
    def("share.coordinator.state.topic.segment.bytes", Int, Some("104857600"), Some(1)),
    between("share.coordinator.snapshot.update.records.per.snapshot", Int, "500", 0, 500),
    def("share.coordinator.load.buffer.size", Int, Some("5242880"), Some(1)),
    // Only 0 (none) is served; share_coordinator.rs refuses the others.
    def("share.coordinator.state.topic.compression.codec", Int, Some("0"), None),
    def("share.coordinator.append.linger.ms", Int, Some("-1"), Some(-1)),
    def("share.coordinator.write.timeout.ms", Int, Some("5000"), Some(1)),
    // Sized for the JVM's threads and buffer pools, which Shale does not have.
    accepted_at_least("share.coordinator.threads", Int, "1", 1),
    accepted_at_least("share.coordinator.cached.buffer.max.bytes", Int, "1048588", 524_288),
    // Nothing acts on a DLQ prefix while a group cannot name a DLQ topic (group_config_defs.rs).
    accepted("errors.deadletterqueue.topic.name.prefix", String, Some("dlq.")),
    def("compression.type", String, Some("producer"), None),
    // Broker-wide defaults of the topic configs of the same names (KIP-390).
    def("compression.gzip.level", Int, Some("-1"), Some(-1)),
    def("compression.lz4.level", Int, Some("9"), Some(1)),
    def("compression.zstd.level", Int, Some("3"), Some(-131072)),
    // Empty: no authorizer. Only Kafka's StandardAuthorizer is served (`config/authorizer.rs`).
    def("authorizer.class.name", String, Some(""), None),
    accepted("num.network.threads", Int, Some("3")),
    accepted("num.io.threads", Int, Some("8")),
    // Kafka's 102400: with the kernel's autotuning (-1) a sendfile fetch answer queues whole
    // in the socket, and a Java consumer reading 8 MiB answers in large chunks ran 20-30%
    // slower at steady state (BENCHMARKS.md, issue 4).
    def("socket.send.buffer.bytes", Int, Some("102400"), Some(-1)),
    def("socket.receive.buffer.bytes", Int, Some("102400"), Some(-1)),
    accepted("background.threads", Int, Some("10")),
    // Kafka 4.4's default adds `streams`, which Shale does not serve; start-up refuses a list
    // naming a protocol other than these two.
    def("group.coordinator.rebalance.protocols", List, Some("classic,consumer"), None),
    accepted("log.cleaner.threads", Int, Some("1")),
    accepted("metadata.log.segment.bytes", Int, Some("1073741824")),
    accepted("metadata.max.retention.bytes", Long, Some("104857600")),
    accepted("log.cleaner.dedupe.buffer.size", Long, Some("134217728")),
];

/// The keys Shale applies at runtime when AlterConfigs sets them for one broker or for the
/// cluster: each is a topic config's broker synonym, and topic configs are resolved afresh on
/// every metadata change. Kafka updates more at runtime (thread pools, listeners, TLS, the
/// cleaner's threads); Shale refuses an update of those rather than keep a value it would not
/// act on.
pub const DYNAMIC_KEYS: &[&str] = &[
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleanup.policy",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.type",
    "log.preallocate",
    "log.retention.bytes",
    "log.retention.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "log.segment.delete.delay.ms",
    "max.decompressed.message.bytes",
    "message.max.bytes",
    "min.insync.replicas",
    "unclean.leader.election.enable",
];

/// Whether Shale applies an update of `name` at runtime.
pub fn is_dynamic(name: &str) -> bool {
    DYNAMIC_KEYS.contains(&name)
}

/// Keys Kafka defines with `defineInternal`: read and checked like the others, but never
/// described, as Kafka's DescribeConfigs of a broker leaves them out.
pub const INTERNAL_BROKER_CONFIGS: &[BrokerConfigDef] = &[
    def(
        "group.share.initialize.retry.interval.ms",
        Int,
        Some("30000"),
        Some(1),
    ),
    def(
        "share.coordinator.state.topic.prune.interval.ms",
        Int,
        Some("300000"),
        Some(1),
    ),
    def(
        "share.coordinator.cold.partition.snapshot.interval.ms",
        Int,
        Some("300000"),
        Some(1),
    ),
];

/// Looks a key up in the table, then among the internal keys.
pub fn find(name: &str) -> Option<&'static BrokerConfigDef> {
    BROKER_CONFIGS
        .iter()
        .chain(INTERNAL_BROKER_CONFIGS)
        .find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = BROKER_CONFIGS
            .iter()
            .chain(INTERNAL_BROKER_CONFIGS)
            .map(|d| d.name)
            .collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }

    #[test]
    fn dynamic_keys_are_kafkas_and_stand_for_topic_configs() {
        for key in DYNAMIC_KEYS {
            assert!(find(key).is_some(), "{key} is in the table");
            assert!(
                super::super::kafka_keys::is_kafka_dynamic_key(key),
                "Kafka updates {key} at runtime"
            );
            assert!(
                shale_metadata::config_defs::topic_config_for_broker_synonym(key).is_some(),
                "{key} is applied through a topic config"
            );
        }
    }

    #[test]
    fn kafka_defaults_that_clients_check() {
        assert_eq!(
            find("message.max.bytes").and_then(|d| d.default),
            Some("1048588")
        );
        assert_eq!(
            find("log.segment.bytes").and_then(|d| d.min),
            Some(1_048_576)
        );
        assert_eq!(
            find("log.message.timestamp.after.max.ms").and_then(|d| d.default),
            Some("3600000")
        );
    }
}
