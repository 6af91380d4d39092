#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shale_auth::fuzzing::run("scram_client_final", data);
});
