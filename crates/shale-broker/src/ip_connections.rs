//! Open connections per client address, held to `max.connections.per.ip` and its overrides as
//! Kafka's ConnectionQuotas does: counted across every listener, a connection over its
//! address's limit is closed as soon as it is accepted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::ConnectionsPerIp;

/// The open connections of each address.
#[derive(Debug)]
pub struct IpConnections {
    limits: ConnectionsPerIp,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One counted connection; dropping it frees its place.
#[derive(Debug)]
pub struct IpConnection {
    owner: Arc<IpConnections>,
    addr: IpAddr,
}

impl IpConnections {
    pub fn new(limits: ConnectionsPerIp) -> Arc<IpConnections> {
        Arc::new(IpConnections {
            limits,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a new connection from `addr`, or `None` when the address is at its limit.
    pub fn try_open(self: &Arc<Self>, addr: IpAddr) -> Option<IpConnection> {
        let mut open = self.open.lock();
        let count = open.entry(addr).or_insert(0);
        if *count >= self.limits.max_for(addr) {
            if *count == 0 {
                open.remove(&addr);
            }
            return None;
        }
        *count += 1;
        Some(IpConnection {
            owner: self.clone(),
            addr,
        })
    }

    /// Connections open from `addr`.
    #[cfg(test)]
    fn open_from(&self, addr: IpAddr) -> usize {
        self.open.lock().get(&addr).copied().unwrap_or(0)
    }
}

impl Drop for IpConnection {
    fn drop(&mut self) {
        let mut open = self.owner.open.lock();
        if let Some(count) = open.get_mut(&self.addr) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.addr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_at_its_limit_is_refused_until_one_closes() {
        let limits = ConnectionsPerIp::parse(2, "10.0.0.9:0").unwrap();
        let connections = IpConnections::new(limits);
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let first = connections.try_open(local).unwrap();
        let _second = connections.try_open(local).unwrap();
        assert!(connections.try_open(local).is_none());
        assert_eq!(connections.open_from(local), 2);
        drop(first);
        assert!(connections.try_open(local).is_some());
        assert!(connections.try_open("10.0.0.9".parse().unwrap()).is_none());
        assert_eq!(connections.open_from("10.0.0.9".parse().unwrap()), 0);
    }
}
