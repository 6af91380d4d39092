//! Ports for test brokers whose addresses must be known before they start (voters list each
//! other, a restarted broker keeps its port).
//!
//! Binding port 0 and releasing it is not enough: the kernel hands out the same range to
//! outgoing connections, so a connection between two already running nodes can take the port
//! before the third node binds it. Ports are therefore picked below (or above) the kernel's
//! ephemeral range, where only an explicit bind can take them, and each process walks its own
//! sequence so that tests running side by side do not pick the same port.

use std::net::TcpListener;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU32, Ordering};

/// Linux's default when the kernel's setting cannot be read.
const EPHEMERAL_DEFAULT: RangeInclusive<u16> = 32768..=60999;
/// Ports below this are left to system services.
const PORT_MIN: u16 = 10_000;
/// A range smaller than this is too crowded to walk; the picker then falls back to port 0.
const RANGE_LEN_MIN: u32 = 1_000;

/// A port that nothing listens on now and that no outgoing connection will be given.
pub fn free_port() -> u16 {
    let range = unassigned_range(ephemeral_range());
    let len = range_len(&range);
    if len < RANGE_LEN_MIN {
        return any_free_port();
    }
    static CURSOR: AtomicU32 = AtomicU32::new(u32::MAX);
    // Processes started side by side begin far apart in the range.
    let seed = std::process::id().wrapping_mul(7919) % len;
    let _ = CURSOR.compare_exchange(u32::MAX, seed, Ordering::SeqCst, Ordering::SeqCst);
    for _ in 0..len {
        let offset = CURSOR.fetch_add(1, Ordering::SeqCst) % len;
        let Ok(port) = u16::try_from(u32::from(*range.start()) + offset) else {
            continue;
        };
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    any_free_port()
}

/// The kernel's range for outgoing connections' local ports.
fn ephemeral_range() -> RangeInclusive<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| parse_range(&text))
        .unwrap_or(EPHEMERAL_DEFAULT)
}

fn parse_range(text: &str) -> Option<RangeInclusive<u16>> {
    let mut parts = text.split_whitespace().map(str::parse::<u16>);
    let low = parts.next()?.ok()?;
    let high = parts.next()?.ok()?;
    (low <= high).then_some(low..=high)
}

/// The larger of the stretches below and above `ephemeral`.
fn unassigned_range(ephemeral: RangeInclusive<u16>) -> RangeInclusive<u16> {
    let below = PORT_MIN..=ephemeral.start().saturating_sub(1);
    let above = ephemeral.end().saturating_add(1)..=u16::MAX;
    if range_len(&below) >= range_len(&above) {
        below
    } else {
        above
    }
}

/// How many ports `range` holds (none when it is empty).
fn range_len(range: &RangeInclusive<u16>) -> u32 {
    (u32::from(*range.end()) + 1).saturating_sub(u32::from(*range.start()))
}

/// Last resort: a port from the ephemeral range, free at this moment.
fn any_free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|err| panic!("no free port on 127.0.0.1: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_range_leaves_the_stretch_below_it() {
        assert_eq!(unassigned_range(EPHEMERAL_DEFAULT), 10_000..=32767);
        assert_eq!(parse_range("32768\t60999\n"), Some(EPHEMERAL_DEFAULT));
        assert_eq!(parse_range("bad"), None);
    }

    #[test]
    fn a_low_ephemeral_range_leaves_the_stretch_above_it() {
        assert_eq!(unassigned_range(1024..=50000), 50001..=u16::MAX);
    }

    #[test]
    fn an_ephemeral_range_over_every_port_leaves_too_few_to_walk() {
        assert_eq!(range_len(&RangeInclusive::new(10_000, 9_999)), 0);
        assert_eq!(range_len(&(10_000..=10_000)), 1);
        assert!(range_len(&unassigned_range(1024..=u16::MAX)) < RANGE_LEN_MIN);
    }

    #[test]
    fn picked_ports_are_distinct_bindable_and_outside_the_ephemeral_range() {
        let ephemeral = ephemeral_range();
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
        for port in ports {
            assert!(!ephemeral.contains(&port), "{port} is in {ephemeral:?}");
            if let Err(err) = TcpListener::bind(("127.0.0.1", port)) {
                panic!("picked port {port} cannot be bound: {err}");
            }
        }
    }
}
