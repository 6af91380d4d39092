//! Starts the real `shale` binary on a free port with a temporary data directory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const READY_LINE: &str = "Shale server started";

/// A running broker process; killed on drop.
pub struct Shale {
    child: Option<Child>,
    pub port: u16,
    data: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    extra: Vec<String>,
    /// A properties file given with `--config`, under the overrides.
    config_file: Option<PathBuf>,
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

pub use shale_testkit::free_port;

/// ApiVersions v0 with correlation id `id` and no client id, as a frame.
pub fn api_versions_frame(id: i32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&id.to_be_bytes());
    body.extend_from_slice(&(-1i16).to_be_bytes());
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

impl Shale {
    pub fn start() -> Shale {
        Shale::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> Shale {
        Shale::start_from(None, extra)
    }

    /// A broker from the properties file `config_file`, with `extra` overrides on top.
    pub fn start_from(config_file: Option<&Path>, extra: &[&str]) -> Shale {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let mut s = Shale {
            child: None,
            port: free_port(),
            data,
            _tmp: Some(tmp),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            config_file: config_file.map(Path::to_path_buf),
            log: Default::default(),
        };
        s.spawn();
        s
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_shale"));
        cmd.arg("serve");
        if let Some(file) = &self.config_file {
            cmd.arg("--config").arg(file);
        }
        cmd.arg("--override")
            .arg(format!("listeners=PLAINTEXT://127.0.0.1:{}", self.port))
            .arg("--override")
            .arg(format!("log.dirs={}", self.data.display()))
            .arg("--override")
            .arg("group.initial.rebalance.delay.ms=0")
            .arg("--override")
            .arg("offsets.topic.replication.factor=1")
            .arg("--override")
            .arg("offsets.topic.num.partitions=4")
            .arg("--override")
            .arg("group.min.session.timeout.ms=1000");
        for e in &self.extra {
            cmd.arg("--override").arg(e);
        }
        cmd.env("SHALE_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn shale");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel::<()>();
        let log = self.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains(READY_LINE) {
                    let _ = tx.send(());
                }
                log.lock().unwrap().push(line);
            }
        });
        let log = self.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.lock().unwrap().push(line);
            }
        });
        self.child = Some(child);
        if rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let log = self.log.lock().unwrap().join("\n");
            panic!("shale did not become ready:\n{log}");
        }
    }

    /// SIGTERM and wait: a clean shutdown.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = child.id().to_string();
        Command::new("kill")
            .arg("-TERM")
            .arg(&pid)
            .status()
            .unwrap();
        child.wait().unwrap()
    }

    /// SIGKILL: an unclean stop.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn restart(&mut self) {
        if self.child.is_some() {
            self.stop();
        }
        self.spawn();
    }

    pub fn restart_after_kill(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Shale {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An admin client for the broker.
pub fn admin(shale: &Shale) -> rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> {
    rdkafka::config::ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .create()
        .expect("admin")
}

/// A tiny executor: rdkafka's admin futures complete from librdkafka's own threads.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::sync::{Arc, Condvar, Mutex};
    use std::task::{Context, Poll, Wake, Waker};
    struct Signal(Mutex<bool>, Condvar);
    impl Wake for Signal {
        fn wake(self: Arc<Self>) {
            *self.0.lock().unwrap() = true;
            self.1.notify_one();
        }
    }
    let signal = Arc::new(Signal(Mutex::new(false), Condvar::new()));
    let waker = Waker::from(signal.clone());
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        let mut woken = signal.0.lock().unwrap();
        while !*woken {
            woken = signal.1.wait(woken).unwrap();
        }
        *woken = false;
    }
}

/// Creates `name` with `partitions` partitions at replication factor 1.
pub fn create_topic(shale: &Shale, name: &str, partitions: i32) {
    use rdkafka::admin::{AdminOptions, NewTopic, TopicReplication};
    let results = block_on(admin(shale).create_topics(
        &[NewTopic::new(name, partitions, TopicReplication::Fixed(1))],
        &AdminOptions::new(),
    ))
    .unwrap();
    for r in results {
        r.expect("topic created");
    }
}

/// Writes `count` records `m0..` to one partition and waits until they are acknowledged.
pub fn produce(shale: &Shale, topic: &str, partition: i32, count: usize) {
    use rdkafka::config::ClientConfig;
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .create()
        .expect("producer");
    for i in 0..count {
        let payload = format!("m{i}");
        producer
            .send(
                BaseRecord::<(), _>::to(topic)
                    .partition(partition)
                    .payload(&payload),
            )
            .expect("enqueue");
    }
    producer.flush(Duration::from_secs(30)).expect("flush");
}
