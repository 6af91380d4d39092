//! RecordBatch v2 bytes for tests that speak Kafka's protocol directly.

/// Appends `v` zig-zag varint encoded, as record fields are.
fn put_varint(buf: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.push((z as u8) | 0x80);
        z >>= 7;
    }
    buf.push(z as u8);
}

fn put_bytes(buf: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => put_varint(buf, -1),
        Some(b) => {
            put_varint(buf, b.len() as i64);
            buf.extend_from_slice(b);
        }
    }
}

/// One record's key and value (`None` is null).
pub type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// An uncompressed, non-idempotent batch of `(key, value)` records at `timestamp_ms`, base
/// offset 0, as a client sends it.
pub fn record_batch(records: &[KeyValue<'_>], timestamp_ms: i64) -> Vec<u8> {
    let mut encoded = Vec::new();
    for (i, (key, value)) in records.iter().enumerate() {
        let mut r = vec![0u8]; // attributes
        put_varint(&mut r, 0); // timestamp delta
        put_varint(&mut r, i as i64); // offset delta
        put_bytes(&mut r, *key);
        put_bytes(&mut r, *value);
        put_varint(&mut r, 0); // headers
        put_varint(&mut encoded, r.len() as i64);
        encoded.extend_from_slice(&r);
    }
    let count = records.len() as i32;
    // From attributes to the end: what the CRC covers.
    let mut body = Vec::new();
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&(count - 1).to_be_bytes());
    body.extend_from_slice(&timestamp_ms.to_be_bytes());
    body.extend_from_slice(&timestamp_ms.to_be_bytes());
    body.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
    body.extend_from_slice(&(-1i16).to_be_bytes()); // producer epoch
    body.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    body.extend_from_slice(&count.to_be_bytes());
    body.extend_from_slice(&encoded);
    let mut out = Vec::with_capacity(body.len() + 21);
    out.extend_from_slice(&0i64.to_be_bytes());
    out.extend_from_slice(&((4 + 1 + 4 + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
    out.push(2); // magic
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_and_crc_cover_the_batch() {
        let b = record_batch(&[(None, Some(b"v")), (Some(b"k"), None)], 1_700_000_000_000);
        let len = i32::from_be_bytes([b[8], b[9], b[10], b[11]]) as usize;
        assert_eq!(len + 12, b.len());
        let crc = u32::from_be_bytes([b[17], b[18], b[19], b[20]]);
        assert_eq!(crc, crc32c::crc32c(&b[21..]));
        // Two records: last offset delta 1, record count 2.
        assert_eq!(i32::from_be_bytes([b[23], b[24], b[25], b[26]]), 1);
        assert_eq!(i32::from_be_bytes([b[57], b[58], b[59], b[60]]), 2);
    }
}
