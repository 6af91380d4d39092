//! Is a broker's process still there? A new active controller asks this of every unfenced
//! broker that has no session link to it yet, so a broker that died together with the previous
//! controller is fenced without waiting for `broker.session.timeout.ms`.
//!
//! Only a refused connection counts as proof: the port is closed, so the process that listened
//! on it is gone. A connection that is accepted, or that does not answer within the timeout (a
//! stopped process, a lost network), proves nothing, and the session timeout decides.

use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio::time::Duration;

/// What probing a broker's ports showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Every address refused the connection: nothing listens there any more.
    Refused,
    /// Something accepted the connection, or nothing answered in time.
    Inconclusive,
}

/// Where a broker can be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProbeTarget {
    /// A voter's controller listener, open for as long as the voter runs.
    Controller(SocketAddr),
    /// A broker's registered listeners, as (host, port).
    Listeners(Vec<(String, u16)>),
}

/// Connects to every address of `target`, each bounded by `timeout`.
pub(crate) async fn probe(target: &ProbeTarget, timeout: Duration) -> Probe {
    let addrs: Vec<SocketAddr> = match target {
        ProbeTarget::Controller(addr) => vec![*addr],
        ProbeTarget::Listeners(endpoints) => {
            let mut addrs = Vec::new();
            for (host, port) in endpoints {
                let lookup = tokio::net::lookup_host((host.as_str(), *port));
                match tokio::time::timeout(timeout, lookup).await {
                    Ok(Ok(found)) => addrs.extend(found),
                    // An address that cannot be resolved proves nothing.
                    _ => return Probe::Inconclusive,
                }
            }
            addrs
        }
    };
    if addrs.is_empty() {
        return Probe::Inconclusive;
    }
    for addr in addrs {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Err(err)) if err.kind() == std::io::ErrorKind::ConnectionRefused => {}
            _ => return Probe::Inconclusive,
        }
    }
    Probe::Refused
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_closed_port_is_refused_and_an_open_one_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        assert_eq!(
            probe(&ProbeTarget::Controller(addr), TIMEOUT).await,
            Probe::Inconclusive
        );
        let by_name = ProbeTarget::Listeners(vec![("127.0.0.1".into(), addr.port())]);
        assert_eq!(probe(&by_name, TIMEOUT).await, Probe::Inconclusive);
        drop(listener);
        assert_eq!(
            probe(&ProbeTarget::Controller(addr), TIMEOUT).await,
            Probe::Refused
        );
        assert_eq!(probe(&by_name, TIMEOUT).await, Probe::Refused);
    }

    #[tokio::test]
    async fn one_open_listener_of_several_is_enough() {
        let open = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closed_port = closed.local_addr().unwrap().port();
        drop(closed);
        let target = ProbeTarget::Listeners(vec![
            ("127.0.0.1".into(), closed_port),
            ("127.0.0.1".into(), open.local_addr().unwrap().port()),
        ]);
        assert_eq!(probe(&target, TIMEOUT).await, Probe::Inconclusive);
        assert_eq!(
            probe(&ProbeTarget::Listeners(Vec::new()), TIMEOUT).await,
            Probe::Inconclusive
        );
    }
}
