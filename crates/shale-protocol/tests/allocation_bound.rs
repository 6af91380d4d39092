//! Decoding may allocate only a small multiple of the bytes received: measured with a
//! counting global allocator over hostile bodies.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{BufMut, Bytes, BytesMut};
use shale_protocol::{decode_request, RequestHeader};

struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE_BYTES.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK_BYTES.fetch_max(live, Ordering::SeqCst);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Rust values are larger than their tightest wire form (an empty compact string is one
/// byte on the wire and a 32-byte `Bytes` in memory), so the bound is a multiple; the
/// worst case below measures 32.
const MAX_BYTES_PER_BODY_BYTE: usize = 48;
const FIXED_OVERHEAD_BYTES: usize = 64 * 1024;

fn peak_while_decoding(api_key: i16, api_version: i16, body: Bytes) -> usize {
    let header = RequestHeader {
        api_key,
        api_version,
        correlation_id: 0,
        client_id: None,
        header_version: 1,
    };
    let before = LIVE_BYTES.load(Ordering::SeqCst);
    PEAK_BYTES.store(before, Ordering::SeqCst);
    let decoded = decode_request(&header, body);
    let peak = PEAK_BYTES.load(Ordering::SeqCst) - before;
    drop(decoded);
    peak
}

fn varint(out: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        out.put_u8((value as u8) | 0x80);
        value >>= 7;
    }
    out.put_u8(value as u8);
}

#[test]
fn decoding_allocates_a_bounded_multiple_of_the_body() {
    let mut cases: Vec<(&str, i16, i16, Bytes)> = Vec::new();
    // DeleteTopics v4: [names] of empty compact strings, one byte each.
    for count in [1_000u32, 100_000] {
        let mut body = BytesMut::new();
        varint(&mut body, count + 1);
        body.put_bytes(1, count as usize);
        body.put_i32(1000);
        body.put_u8(0);
        cases.push(("DeleteTopics v4 empty names", 20, 4, body.freeze()));
    }
    // The same count claimed with the elements missing: refused before allocating.
    let mut body = BytesMut::new();
    varint(&mut body, u32::MAX);
    body.put_bytes(1, 1000);
    cases.push(("DeleteTopics v4 huge count", 20, 4, body.freeze()));
    // Metadata v0 and v12 with a maximal array count.
    cases.push((
        "Metadata v0 7fffffff",
        3,
        0,
        Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]),
    ));
    cases.push((
        "Metadata v12 huge compact",
        3,
        12,
        Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0]),
    ));
    // Fetch v4 with many empty partitions lists.
    let mut body = BytesMut::new();
    body.put_i32(-1);
    body.put_i32(0);
    body.put_i32(0);
    body.put_i32(0);
    body.put_i8(0);
    body.put_i32(20_000);
    for _ in 0..20_000 {
        body.put_i16(0);
        body.put_i32(0);
    }
    cases.push(("Fetch v4 many topics", 1, 4, body.freeze()));

    for (name, api_key, api_version, body) in cases {
        let len = body.len();
        let peak = peak_while_decoding(api_key, api_version, body);
        let limit = len * MAX_BYTES_PER_BODY_BYTE + FIXED_OVERHEAD_BYTES;
        assert!(
            peak <= limit,
            "{name}: {peak} bytes allocated for a {len}-byte body"
        );
    }
}
