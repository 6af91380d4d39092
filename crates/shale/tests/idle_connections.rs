//! `connections.max.idle.ms`: the broker closes a connection that has been quiet for that
//! long, keeps one that goes on sending requests, and expires unauthenticated connections on
//! a SASL listener the same way.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::api_versions_frame;
use common::{free_port, Shale};

/// Sends ApiVersions and reads its answer; panics unless it comes.
fn ask(stream: &mut TcpStream, id: i32) {
    stream.write_all(&api_versions_frame(id)).unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).unwrap();
    assert_eq!(body[..4], id.to_be_bytes());
}

/// Waits (bounded) for the broker to close `stream`, and returns how long that took.
fn time_until_closed(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => started.elapsed(),
        Ok(_) => panic!("the broker sent bytes nobody asked for"),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => started.elapsed(),
        Err(e) => panic!("the broker did not close the idle connection: {e}"),
    }
}

#[test]
fn a_quiet_connection_is_closed_after_connections_max_idle_ms() {
    let shale = Shale::start_with(&["connections.max.idle.ms=500"]);
    let mut stream = TcpStream::connect(shale.bootstrap()).unwrap();
    ask(&mut stream, 1);
    let waited = time_until_closed(&mut stream);
    assert!(
        waited >= Duration::from_millis(400),
        "closed after {waited:?}, before the idle time"
    );
}

#[test]
fn a_connection_that_keeps_asking_stays_open_past_the_idle_time() {
    let shale = Shale::start_with(&["connections.max.idle.ms=1000"]);
    let mut stream = TcpStream::connect(shale.bootstrap()).unwrap();
    // Three seconds of requests paced well inside the idle time.
    for id in 0..15 {
        ask(&mut stream, id);
        std::thread::sleep(Duration::from_millis(200));
    }
    ask(&mut stream, 99);
}

#[test]
fn a_negative_idle_time_keeps_quiet_connections() {
    let shale = Shale::start_with(&["connections.max.idle.ms=-1"]);
    let mut stream = TcpStream::connect(shale.bootstrap()).unwrap();
    ask(&mut stream, 1);
    stream
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut byte = [0u8; 1];
    let err = stream.read(&mut byte).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
        "the connection stayed open and quiet: {err}"
    );
    ask(&mut stream, 2);
}

#[test]
fn an_unauthenticated_connection_on_a_sasl_listener_expires_too() {
    let (plain, sasl) = (free_port(), free_port());
    let listeners = format!("listeners=PLAINTEXT://127.0.0.1:{plain},CLIENTS://127.0.0.1:{sasl}");
    let _shale = Shale::start_with(&[
        "connections.max.idle.ms=500",
        &listeners,
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENTS:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN",
        "listener.name.clients.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";",
    ]);
    let mut stream = TcpStream::connect(("127.0.0.1", sasl)).unwrap();
    ask(&mut stream, 1);
    time_until_closed(&mut stream);
}
