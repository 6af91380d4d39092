#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shale_auth::fuzzing::run("oauthbearer", data);
});
