//! `max.connections.per.ip` and `max.connections.per.ip.overrides`: a client address at its
//! limit has its next connection closed at once, the open ones keep being served, and a
//! closed one frees its place.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::api_versions_frame;
use common::Shale;

/// Whether the broker answers ApiVersions on `stream` (false when it closed the connection).
fn answers(stream: &mut TcpStream, id: i32) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    if stream.write_all(&api_versions_frame(id)).is_err() {
        return false;
    }
    let mut len = [0u8; 4];
    if stream.read_exact(&mut len).is_err() {
        return false;
    }
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).is_ok() && body[..4] == id.to_be_bytes()
}

/// A connection the broker answers on; a just-closed one may hold its place for a moment, so
/// a refused attempt is tried again.
fn served_connection(shale: &Shale, id: i32) -> TcpStream {
    shale_testkit::wait_for("a served connection", Duration::from_secs(10), || {
        let mut stream = TcpStream::connect(shale.bootstrap()).ok()?;
        answers(&mut stream, id).then_some(stream)
    })
}

fn check_limit_of_two(shale: &Shale) {
    // Both answered: the address holds exactly these two places (the limit is two).
    let mut first = served_connection(shale, 1);
    let mut second = served_connection(shale, 2);
    assert!(answers(&mut second, 3));
    let mut third = TcpStream::connect(shale.bootstrap()).unwrap();
    assert!(
        !answers(&mut third, 4),
        "a third connection from one address is closed"
    );
    // The open ones are still served.
    assert!(answers(&mut first, 5));
    assert!(answers(&mut second, 6));
    drop(second);
    // Its place is freed: a new connection is served again.
    let _again = served_connection(shale, 7);
}

#[test]
fn an_address_at_max_connections_per_ip_has_its_next_connection_closed() {
    let shale = Shale::start_with(&["max.connections.per.ip=2"]);
    check_limit_of_two(&shale);
}

#[test]
fn an_override_sets_the_limit_of_its_address() {
    let shale = Shale::start_with(&[
        "max.connections.per.ip=1000",
        "max.connections.per.ip.overrides=127.0.0.1:2",
    ]);
    check_limit_of_two(&shale);
}
