//! Property tests: random frames, random bodies for random APIs and versions, and
//! damaged schema-generated bodies never panic (and never abort on allocation).

use proptest::prelude::*;

use crate::fuzzing;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn random_frames_never_panic(frame in proptest::collection::vec(any::<u8>(), 0..256)) {
        fuzzing::frame(&frame);
    }

    #[test]
    fn random_bodies_for_random_apis_never_panic(
        api_key in -2i16..100,
        api_version in -2i16..20,
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut data = vec![api_version as u8];
        data.extend_from_slice(&body);
        fuzzing::request(api_key, &data);
    }

    #[test]
    fn frames_with_plausible_headers_never_panic(
        api_key in 0i16..93,
        api_version in 0i16..19,
        client_id_len in -2i16..8,
        rest in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut frame = Vec::new();
        frame.extend_from_slice(&api_key.to_be_bytes());
        frame.extend_from_slice(&api_version.to_be_bytes());
        frame.extend_from_slice(&7i32.to_be_bytes());
        frame.extend_from_slice(&client_id_len.to_be_bytes());
        frame.extend_from_slice(&rest);
        fuzzing::frame(&frame);
    }

    #[test]
    fn damaged_valid_bodies_never_panic(data in proptest::collection::vec(any::<u8>(), 5..96)) {
        fuzzing::structured(&data);
    }

    #[test]
    fn damaged_valid_responses_never_panic(data in proptest::collection::vec(any::<u8>(), 5..96)) {
        fuzzing::structured_response(&data);
    }

    #[test]
    fn damaged_share_bodies_never_panic(data in proptest::collection::vec(any::<u8>(), 5..128)) {
        fuzzing::share_structured(&data);
    }

    #[test]
    fn damaged_share_responses_never_panic(data in proptest::collection::vec(any::<u8>(), 5..128)) {
        fuzzing::share_structured_response(&data);
    }
}
