//! The replication fault harness: three real `shale` processes (combined roles) on loopback,
//! an idempotent acks=all producer writing to a topic with replication factor 3 and
//! `min.insync.replicas=2`, and faults while it writes: kill -9 of the partition leader, of a
//! follower and of the active controller, SIGSTOP of the leader until another one is elected,
//! and SIGSTOP of both followers (the leader isolated, as in Jepsen's 2013 analysis: acks=all
//! writes time out, none acknowledged is lost), and a cut of the links from the followers to
//! the leader through a TCP proxy the test controls (the ISR shrinks after
//! `replica.lag.time.max.ms`, acks=all is refused with NOT_ENOUGH_REPLICAS, the followers rejoin
//! once the link heals). A checker then reads the partition and every
//! replica's files and reports lost acknowledged records, duplicates, reordering, an offset
//! holding another record, and replicas whose logs differ. Bounded: the writer stops after a
//! fixed number of records and every wait has a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cluster_support::{call, metadata, Cluster, WAIT_MAX};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, RequestKind, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;
use rdkafka::{Offset, TopicPartitionList};

const TOPIC: &str = "faults";

fn create_replicated_topic(cluster: &mut Cluster) {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let id = cluster.brokers()[0];
        let request = CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_num_partitions(1)
                .with_replication_factor(3)
                .with_configs(vec![CreatableTopicConfig::default()
                    .with_name(StrBytes::from_static_str("min.insync.replicas"))
                    .with_value(Some(StrBytes::from_static_str("2")))])])
            .with_timeout_ms(30_000);
        let code = match call(
            &cluster.node(id).bootstrap(),
            ApiKey::CreateTopics,
            7,
            RequestKind::CreateTopics(request),
        ) {
            ResponseKind::CreateTopics(r) => r.topics[0].error_code,
            other => panic!("{other:?}"),
        };
        if code == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "cannot create the topic: {code}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The partition's leader and ISR as broker `via` reports them.
fn leader_and_isr(cluster: &Cluster, via: i32) -> (i32, Vec<i32>) {
    let m = metadata(&cluster.node(via).bootstrap());
    let t = m
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == TOPIC))
        .expect("topic known");
    let p = &t.partitions[0];
    (p.leader_id.0, p.isr_nodes.iter().map(|b| b.0).collect())
}

/// Waits on other processes' state, at most `WAIT_MAX`.
fn wait_until(what: &str, f: impl FnMut() -> bool) {
    shale_testkit::wait_until(what, WAIT_MAX, f);
}

/// What the writer learnt: per record number, the acknowledged offset (or none).
type Acks = Arc<Mutex<BTreeMap<u64, Option<i64>>>>;

fn start_writer(
    bootstrap: String,
    stop: Arc<AtomicBool>,
    acks: Acks,
    records_max: u64,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let producer: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("linger.ms", "5")
            .set("message.timeout.ms", "30000")
            .set("request.timeout.ms", "5000")
            .set("topic.metadata.refresh.interval.ms", "500")
            .create()
            .unwrap();
        let mut next = 0u64;
        while !stop.load(Ordering::Acquire) && next < records_max {
            let window: Vec<u64> = (next..(next + 20).min(records_max)).collect();
            next += window.len() as u64;
            let futures: Vec<_> = window
                .iter()
                .map(|i| {
                    let key = i.to_string();
                    let value = format!("value-{i}");
                    producer
                        .send_result(
                            FutureRecord::to(TOPIC)
                                .partition(0)
                                .key(&key)
                                .payload(&value),
                        )
                        .map_err(|(e, _)| e)
                })
                .collect();
            for (i, f) in window.into_iter().zip(futures) {
                let offset = match f {
                    Ok(delivery) => match runtime.block_on(delivery) {
                        Ok(Ok(d)) => Some(d.offset),
                        _ => None,
                    },
                    Err(_) => None,
                };
                acks.lock().unwrap().insert(i, offset);
            }
        }
    })
}

/// Every segment file of the partition on node `data`, concatenated in offset order.
fn replica_bytes(data: &Path) -> Vec<u8> {
    let dir = data.join(format!("{TOPIC}-0"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap_or_default())
        .collect()
}

/// Reads the whole partition through `bootstrap` (up to the high watermark): offset ->
/// record number.
fn read_partition(bootstrap: &str) -> BTreeMap<i64, u64> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "checker")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(TOPIC, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).unwrap();
    let mut out = BTreeMap::new();
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        assert!(
            Instant::now() < deadline,
            "checker could not read the partition"
        );
        match consumer.poll(Duration::from_millis(500)) {
            Some(Ok(m)) => {
                // Records of the raw probes carry no number.
                let Some(key) = m
                    .key()
                    .and_then(|k| std::str::from_utf8(k).ok())
                    .and_then(|k| k.parse::<u64>().ok())
                else {
                    continue;
                };
                assert!(
                    out.insert(m.offset(), key).is_none(),
                    "offset {} read twice",
                    m.offset()
                );
            }
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => return out,
            Some(Err(e)) => panic!("checker read failed: {e}"),
            None => {}
        }
    }
}

/// The checker: problems found, empty when none.
fn check(
    acks: &BTreeMap<u64, Option<i64>>,
    read: &BTreeMap<i64, u64>,
    replicas: &[(i32, Vec<u8>)],
) -> Vec<String> {
    let mut problems = Vec::new();
    for (record, offset) in acks {
        if let Some(offset) = offset {
            match read.get(offset) {
                None => problems.push(format!("acknowledged record {record} at {offset} lost")),
                Some(found) if found != record => problems.push(format!(
                    "offset {offset} acknowledged for record {record} holds record {found}"
                )),
                Some(_) => {}
            }
        }
    }
    let mut seen = BTreeMap::new();
    for (offset, record) in read {
        if let Some(first) = seen.insert(*record, *offset) {
            problems.push(format!(
                "record {record} duplicated at {first} and {offset}"
            ));
        }
    }
    let order: Vec<u64> = read.values().copied().collect();
    if let Some(w) = order.windows(2).find(|w| w[0] >= w[1]) {
        problems.push(format!("records out of order: {} before {}", w[0], w[1]));
    }
    for w in replicas.windows(2) {
        if w[0].1 != w[1].1 {
            problems.push(format!(
                "replicas {} and {} differ ({} and {} bytes)",
                w[0].0,
                w[1].0,
                w[0].1.len(),
                w[1].1.len()
            ));
        }
    }
    problems
}

/// The pid of node `data`'s process (found by its `log.dirs` argument).
fn pid_of(data: &Path) -> i32 {
    let wanted = format!("log.dirs={}", data.display());
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == wanted.as_bytes())
        {
            return pid;
        }
    }
    panic!("no process for {}", data.display());
}

fn signal(pid: i32, name: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} {pid}");
}

/// One record batch with key "probe" (magic 2, uncompressed, no producer id).
fn probe_batch() -> Vec<u8> {
    let key = b"probe";
    let value = b"probe";
    let mut body = vec![0u8]; // attributes
    body.extend_from_slice(&[0, 0]); // timestamp delta 0, offset delta 0 (zigzag varints)
    body.push((key.len() * 2) as u8);
    body.extend_from_slice(key);
    body.push((value.len() * 2) as u8);
    body.extend_from_slice(value);
    body.push(0); // no headers
    let mut records = vec![(body.len() * 2) as u8];
    records.extend_from_slice(&body);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut after_crc = Vec::new();
    after_crc.extend_from_slice(&0i16.to_be_bytes());
    after_crc.extend_from_slice(&0i32.to_be_bytes());
    after_crc.extend_from_slice(&now.to_be_bytes());
    after_crc.extend_from_slice(&now.to_be_bytes());
    after_crc.extend_from_slice(&(-1i64).to_be_bytes());
    after_crc.extend_from_slice(&(-1i16).to_be_bytes());
    after_crc.extend_from_slice(&(-1i32).to_be_bytes());
    after_crc.extend_from_slice(&1i32.to_be_bytes());
    after_crc.extend_from_slice(&records);
    let mut out = Vec::new();
    out.extend_from_slice(&0i64.to_be_bytes());
    out.extend_from_slice(&((after_crc.len() + 9) as i32).to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out.push(2);
    out.extend_from_slice(&crc32c::crc32c(&after_crc).to_be_bytes());
    out.extend_from_slice(&after_crc);
    out
}

/// An acks=all Produce of one probe record straight to `addr`: the partition's error code.
fn produce_probe(addr: &str, timeout_ms: i32) -> i16 {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let request = kafka_protocol::messages::ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(timeout_ms)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(bytes::Bytes::from(probe_batch())))])]);
    match call(addr, ApiKey::Produce, 9, RequestKind::Produce(request)) {
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// A cluster restarted with faster replica timings than Kafka's defaults (short runs).
fn fast_cluster() -> Cluster {
    fast_cluster_with(&[])
}

fn fast_cluster_with(extra: &[&str]) -> Cluster {
    let mut cluster = Cluster::combined(3);
    cluster.kill_all();
    cluster.overrides = vec![
        "replica.fetch.backoff.ms=100".into(),
        "replica.fetch.wait.max.ms=200".into(),
        "replica.lag.time.max.ms=3000".into(),
    ];
    cluster
        .overrides
        .extend(extra.iter().map(|e| e.to_string()));
    cluster.start_nodes(&[1, 2, 3]);
    create_replicated_topic(&mut cluster);
    wait_until("a full ISR", || {
        let (leader, isr) = leader_and_isr(&cluster, 1);
        leader > 0 && isr.len() == 3
    });
    cluster
}

fn all_bootstrap(cluster: &Cluster) -> String {
    (1..=3)
        .map(|id| cluster.node(id).bootstrap())
        .collect::<Vec<_>>()
        .join(",")
}

fn acked(acks: &Acks) -> usize {
    acks.lock()
        .unwrap()
        .values()
        .filter(|o| o.is_some())
        .count()
}

/// Stops the writer, waits for the replicas to converge and runs the checker.
fn stop_and_check(
    cluster: &Cluster,
    via: i32,
    stop: &AtomicBool,
    writer: std::thread::JoinHandle<()>,
    acks: &Acks,
    acknowledged_min: usize,
) {
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    wait_until("a full ISR after the faults", || {
        leader_and_isr(cluster, via).1.len() == 3
    });
    let mut replicas = Vec::new();
    wait_until("replicas to converge", || {
        replicas = (1..=3)
            .map(|id| (id, replica_bytes(&cluster.node(id).data)))
            .collect::<Vec<_>>();
        replicas.windows(2).all(|w| w[0].1.len() == w[1].1.len())
    });
    let (leader_now, _) = leader_and_isr(cluster, via);
    let read = read_partition(&cluster.node(leader_now).bootstrap());
    let acks = acks.lock().unwrap().clone();
    let acknowledged = acks.values().filter(|o| o.is_some()).count();
    assert!(
        acknowledged >= acknowledged_min,
        "only {acknowledged} records acknowledged"
    );
    let problems = check(&acks, &read, &replicas);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn sigstop_of_the_leader_isolation_and_kill_of_the_controller_lose_no_acknowledged_record() {
    let mut cluster = fast_cluster();
    let acks: Acks = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = start_writer(all_bootstrap(&cluster), stop.clone(), acks.clone(), 3_000);
    wait_until("first acknowledgements", || acked(&acks) >= 200);

    // The leader pauses until the controller fenced it and another replica leads.
    let (leader, _) = leader_and_isr(&cluster, 1);
    let paused = pid_of(&cluster.node(leader).data);
    signal(paused, "STOP");
    let survivor = (1..=3).find(|id| *id != leader).unwrap();
    wait_until("a new leader while the old one is paused", || {
        let (l, _) = leader_and_isr(&cluster, survivor);
        l > 0 && l != leader
    });
    signal(paused, "CONT");
    let before = acked(&acks);
    wait_until("writes after the pause", || acked(&acks) >= before + 200);
    wait_until("the paused leader back in the ISR", || {
        leader_and_isr(&cluster, survivor).1.len() == 3
    });

    // Both followers pause: the leader is alone and the metadata quorum has lost its
    // majority, so the ISR cannot shrink and an acks=all write cannot be acknowledged.
    let (leader, _) = leader_and_isr(&cluster, survivor);
    let followers: Vec<i32> = (1..=3).filter(|id| *id != leader).collect();
    let pids: Vec<i32> = followers
        .iter()
        .map(|id| pid_of(&cluster.node(*id).data))
        .collect();
    for pid in &pids {
        signal(*pid, "STOP");
    }
    let before = acked(&acks);
    assert_eq!(
        produce_probe(&cluster.node(leader).bootstrap(), 1_000),
        kafka_protocol::ResponseError::RequestTimedOut.code(),
        "an isolated leader acknowledged an acks=all write"
    );
    for pid in &pids {
        signal(*pid, "CONT");
    }
    wait_until("writes after the isolation", || {
        acked(&acks) >= before + 200
    });

    // kill -9 of the active controller.
    let controller = cluster.quorum_leader(leader);
    cluster.kill(controller);
    let via = (1..=3).find(|id| *id != controller).unwrap();
    wait_until("a new active controller", || {
        let now = cluster.quorum_leader(via);
        now > 0 && now != controller
    });
    let before = acked(&acks);
    wait_until("writes after the controller failover", || {
        acked(&acks) >= before + 100
    });
    cluster.start_nodes(&[controller]);
    stop_and_check(&cluster, via, &stop, writer, &acks, 700);
}

#[test]
fn kill_9_of_leader_and_follower_loses_no_acknowledged_record() {
    let mut cluster = fast_cluster();
    let acks: Acks = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = start_writer(all_bootstrap(&cluster), stop.clone(), acks.clone(), 3_000);

    wait_until("first acknowledgements", || acked(&acks) >= 200);
    let (leader, _) = leader_and_isr(&cluster, 1);
    cluster.kill(leader);
    let survivor = (1..=3).find(|id| *id != leader).unwrap();
    wait_until("a new leader", || {
        let (l, _) = leader_and_isr(&cluster, survivor);
        l > 0 && l != leader
    });
    let before = acked(&acks);
    wait_until("writes after failover", || acked(&acks) >= before + 200);
    cluster.start_nodes(&[leader]);
    wait_until("the old leader back in the ISR", || {
        leader_and_isr(&cluster, survivor).1.len() == 3
    });

    let (current, _) = leader_and_isr(&cluster, survivor);
    let follower = (1..=3).find(|id| *id != current).unwrap();
    cluster.kill(follower);
    let before = acked(&acks);
    wait_until("writes with a follower down", || {
        acked(&acks) >= before + 200
    });
    cluster.start_nodes(&[follower]);
    stop_and_check(&cluster, survivor, &stop, writer, &acks, 600);
}

/// The group coordinator of `group` as broker `via` answers FindCoordinator.
fn coordinator_of(cluster: &Cluster, via: i32, group: &str) -> i32 {
    use kafka_protocol::messages::FindCoordinatorRequest;
    let mut found = -1;
    wait_until("a group coordinator", || {
        let request = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(group.to_string()))
            .with_key_type(0);
        match call(
            &cluster.node(via).bootstrap(),
            ApiKey::FindCoordinator,
            3,
            RequestKind::FindCoordinator(request),
        ) {
            ResponseKind::FindCoordinator(r) if r.error_code == 0 => {
                found = r.node_id.0;
                true
            }
            ResponseKind::FindCoordinator(_) => false,
            other => panic!("{other:?}"),
        }
    });
    found
}

fn group_consumer(bootstrap: &str, group: &str) -> BaseConsumer {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .create()
        .unwrap();
    consumer.subscribe(&[TOPIC]).unwrap();
    consumer
}

/// Polls until a record arrives; returns its offset.
fn next_offset(consumer: &BaseConsumer) -> i64 {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        assert!(Instant::now() < deadline, "no record for the group");
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
            return m.offset();
        }
    }
}

#[test]
fn a_group_resumes_from_its_committed_offset_after_its_coordinator_is_killed() {
    let mut cluster = fast_cluster_with(&["offsets.topic.replication.factor=3"]);
    let acks: Acks = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = start_writer(all_bootstrap(&cluster), stop, acks.clone(), 100);
    writer.join().unwrap();
    assert_eq!(acked(&acks), 100);

    let group = "survivors";
    let consumer = group_consumer(&all_bootstrap(&cluster), group);
    let mut last = -1;
    while last < 49 {
        last = next_offset(&consumer);
    }
    let mut commit = TopicPartitionList::new();
    commit
        .add_partition_offset(TOPIC, 0, Offset::Offset(50))
        .unwrap();
    consumer
        .commit(&commit, rdkafka::consumer::CommitMode::Sync)
        .unwrap();
    drop(consumer);

    let coordinator = coordinator_of(&cluster, 1, group);
    cluster.kill(coordinator);
    let via = (1..=3).find(|id| *id != coordinator).unwrap();
    wait_until("another coordinator", || {
        coordinator_of(&cluster, via, group) != coordinator
    });
    let bootstrap = (1..=3)
        .filter(|id| *id != coordinator)
        .map(|id| cluster.node(id).bootstrap())
        .collect::<Vec<_>>()
        .join(",");
    let consumer = group_consumer(&bootstrap, group);
    assert_eq!(
        next_offset(&consumer),
        50,
        "the group lost its committed offset"
    );
}

/// A TCP proxy the test controls: forwards to `target` until cut, then closes every
/// connection through it and refuses new ones until healed.
struct LinkProxy {
    port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl LinkProxy {
    fn start(target: u16) -> LinkProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<std::net::TcpStream>>> = Default::default();
        let (cut_flag, open_list) = (cut.clone(), open.clone());
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(inbound) = inbound else { continue };
                if cut_flag.load(Ordering::Acquire) {
                    drop(inbound);
                    continue;
                }
                let Ok(outbound) = std::net::TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let mut list = open_list.lock().unwrap();
                list.push(inbound.try_clone().unwrap());
                list.push(outbound.try_clone().unwrap());
                drop(list);
                for (mut from, mut to) in [
                    (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                    (outbound, inbound),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        LinkProxy { port, cut, open }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    fn heal(&self) {
        self.cut.store(false, Ordering::Release);
    }
}

/// Three combined nodes whose replication traffic (`inter.broker.listener.name=REPLICATION`)
/// reaches each node through a [`LinkProxy`].
struct ProxiedCluster {
    _tmp: tempfile::TempDir,
    client_ports: Vec<u16>,
    proxies: Vec<LinkProxy>,
    data: Vec<std::path::PathBuf>,
    children: Vec<std::process::Child>,
}

impl Drop for ProxiedCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl ProxiedCluster {
    fn start() -> ProxiedCluster {
        use std::io::BufRead;
        let tmp = tempfile::tempdir().unwrap();
        let shale = env!("CARGO_BIN_EXE_shale");
        let client_ports: Vec<u16> = (0..3).map(|_| common::free_port()).collect();
        let replication_ports: Vec<u16> = (0..3).map(|_| common::free_port()).collect();
        let controller_ports: Vec<u16> = (0..3).map(|_| common::free_port()).collect();
        let proxies: Vec<LinkProxy> = replication_ports
            .iter()
            .map(|p| LinkProxy::start(*p))
            .collect();
        let voters = (0..3)
            .map(|i| format!("{}@127.0.0.1:{}", i + 1, controller_ports[i]))
            .collect::<Vec<_>>()
            .join(",");
        let cluster_id = String::from_utf8(
            std::process::Command::new(shale)
                .arg("random-uuid")
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim()
        .to_string();
        let data: Vec<_> = (1..=3)
            .map(|id| tmp.path().join(format!("node-{id}")))
            .collect();
        let args = |i: usize| -> Vec<String> {
            [
                format!("node.id={}", i + 1),
                "process.roles=broker,controller".to_string(),
                format!(
                    "listeners=PLAINTEXT://127.0.0.1:{},REPLICATION://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
                    client_ports[i], replication_ports[i], controller_ports[i]
                ),
                format!(
                    "advertised.listeners=PLAINTEXT://127.0.0.1:{},REPLICATION://127.0.0.1:{}",
                    client_ports[i], proxies[i].port
                ),
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT".to_string(),
                "inter.broker.listener.name=REPLICATION".to_string(),
                "controller.listener.names=CONTROLLER".to_string(),
                format!("controller.quorum.voters={voters}"),
                format!("log.dirs={}", data[i].display()),
                "offsets.topic.replication.factor=1".to_string(),
                "broker.heartbeat.interval.ms=200".to_string(),
                "broker.session.timeout.ms=2000".to_string(),
                "replica.fetch.backoff.ms=100".to_string(),
                "replica.fetch.wait.max.ms=200".to_string(),
                "replica.lag.time.max.ms=2000".to_string(),
                "replica.socket.timeout.ms=2000".to_string(),
            ]
            .into_iter()
            .flat_map(|p| ["--override".to_string(), p])
            .collect()
        };
        for i in 0..3 {
            let out = std::process::Command::new(shale)
                .arg("format")
                .arg("--cluster-id")
                .arg(&cluster_id)
                .args(args(i))
                .output()
                .unwrap();
            assert!(out.status.success(), "format: {out:?}");
        }
        let mut children = Vec::new();
        let mut ready = Vec::new();
        for i in 0..3 {
            let mut child = std::process::Command::new(shale)
                .arg("serve")
                .args(args(i))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                {
                    if line.contains(common::READY_LINE) {
                        let _ = tx.send(());
                    }
                }
            });
            children.push(child);
            ready.push(rx);
        }
        for rx in ready {
            rx.recv_timeout(WAIT_MAX).expect("node ready");
        }
        ProxiedCluster {
            _tmp: tmp,
            client_ports,
            proxies,
            data,
            children,
        }
    }

    fn addr(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.client_ports[(id - 1) as usize])
    }

    fn bootstrap(&self) -> String {
        (1..=3)
            .map(|id| self.addr(id))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The partition's leader and ISR as the broker at `addr` reports them.
fn leader_and_isr_at(addr: &str) -> Option<(i32, Vec<i32>)> {
    let m = metadata(addr);
    let t = m
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == TOPIC))?;
    let p = t.partitions.first()?;
    Some((p.leader_id.0, p.isr_nodes.iter().map(|b| b.0).collect()))
}

fn create_topic_at(addr: &str) {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let request = CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_num_partitions(1)
                .with_replication_factor(3)
                .with_configs(vec![CreatableTopicConfig::default()
                    .with_name(StrBytes::from_static_str("min.insync.replicas"))
                    .with_value(Some(StrBytes::from_static_str("2")))])])
            .with_timeout_ms(30_000);
        let code = match call(
            addr,
            ApiKey::CreateTopics,
            7,
            RequestKind::CreateTopics(request),
        ) {
            ResponseKind::CreateTopics(r) => r.topics[0].error_code,
            other => panic!("{other:?}"),
        };
        if code == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "cannot create the topic: {code}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_leader_cut_off_from_its_followers_shrinks_the_isr_and_refuses_acks_all() {
    let cluster = ProxiedCluster::start();
    create_topic_at(&cluster.addr(1));
    let mut leader = 0;
    wait_until("a full ISR", || match leader_and_isr_at(&cluster.addr(1)) {
        Some((l, isr)) if l > 0 && isr.len() == 3 => {
            leader = l;
            true
        }
        _ => false,
    });
    let acks: Acks = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = start_writer(cluster.bootstrap(), stop.clone(), acks.clone(), 3_000);
    wait_until("first acknowledgements", || acked(&acks) >= 200);

    // Followers can no longer fetch from the leader; it still reaches the controller.
    cluster.proxies[(leader - 1) as usize].cut();
    wait_until("the ISR shrunk to the leader", || {
        leader_and_isr_at(&cluster.addr(leader)) == Some((leader, vec![leader]))
    });
    assert_eq!(
        produce_probe(&cluster.addr(leader), 5_000),
        kafka_protocol::ResponseError::NotEnoughReplicas.code(),
        "acks=all accepted below min.insync.replicas"
    );
    cluster.proxies[(leader - 1) as usize].heal();
    wait_until("the followers back in the ISR", || {
        leader_and_isr_at(&cluster.addr(leader)).is_some_and(|(_, isr)| isr.len() == 3)
    });
    let before = acked(&acks);
    wait_until("writes after the link healed", || {
        acked(&acks) >= before + 200
    });
    stop.store(true, Ordering::Release);
    writer.join().unwrap();

    let mut replicas = Vec::new();
    wait_until("replicas to converge", || {
        replicas = (1..=3)
            .map(|id| (id, replica_bytes(&cluster.data[(id - 1) as usize])))
            .collect::<Vec<_>>();
        replicas.windows(2).all(|w| w[0].1.len() == w[1].1.len())
    });
    let (leader_now, _) = leader_and_isr_at(&cluster.addr(leader)).unwrap();
    let read = read_partition(&cluster.addr(leader_now));
    let acks = acks.lock().unwrap().clone();
    let problems = check(&acks, &read, &replicas);
    assert!(problems.is_empty(), "{problems:#?}");
}
