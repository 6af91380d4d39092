//! I/O fault injection for tests of disk failures (for example ENOSPC) where a small
//! filesystem cannot be mounted. Inactive unless a test arms it.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct FaultInjector {
    /// errno returned by writes once armed; 0 = disarmed.
    write_errno: AtomicI32,
    /// Bytes that may still be written before the fault triggers.
    write_budget_bytes: AtomicU64,
}

impl FaultInjector {
    /// Makes writes fail with `errno` once `after_bytes` more bytes have been written.
    pub fn fail_writes_after(&self, after_bytes: u64, errno: i32) {
        self.write_budget_bytes.store(after_bytes, Ordering::SeqCst);
        self.write_errno.store(errno, Ordering::SeqCst);
    }

    pub fn clear(&self) {
        self.write_errno.store(0, Ordering::SeqCst);
    }

    pub(crate) fn check_write(&self, len: usize) -> io::Result<()> {
        let errno = self.write_errno.load(Ordering::Relaxed);
        if errno == 0 {
            return Ok(());
        }
        let budget = self.write_budget_bytes.load(Ordering::SeqCst);
        if (len as u64) <= budget {
            self.write_budget_bytes
                .fetch_sub(len as u64, Ordering::SeqCst);
            return Ok(());
        }
        Err(io::Error::from_raw_os_error(errno))
    }
}
