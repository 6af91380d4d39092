#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shale_protocol::fuzzing::run("share_structured", data);
});
