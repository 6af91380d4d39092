use super::*;

#[test]
fn saslnames_unescape_and_refuse_stray_equals() {
    assert_eq!(decode_saslname("user").as_deref(), Some("user"));
    assert_eq!(decode_saslname("a=2Cb=3Dc").as_deref(), Some("a,b=c"));
    assert_eq!(decode_saslname("=3D2C").as_deref(), Some("=2C"));
    assert_eq!(decode_saslname("a=41"), None);
    assert_eq!(decode_saslname("a="), None);
    assert_eq!(decode_saslname("a=2"), None);
    assert_eq!(decode_saslname(""), None);
    assert_eq!(encode_saslname("a,b=c"), "a=2Cb=3Dc");
    assert_eq!(
        decode_saslname(&encode_saslname("=,=2C")).as_deref(),
        Some("=,=2C")
    );
}

#[test]
fn client_first_fields() {
    let first = ClientFirst::parse(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
    assert_eq!(first.gs2_header, "n,,");
    assert_eq!(first.authzid, None);
    assert_eq!(first.username, "user");
    assert_eq!(first.nonce, "rOprNGfwEbeRWgbNEkqO");
    assert_eq!(first.bare, "n=user,r=rOprNGfwEbeRWgbNEkqO");
    assert!(first.extensions.is_empty());
    assert!(!first.token_authenticated());

    let first = ClientFirst::parse(b"n,a=b=2Cob,n=b=2Cob,r=x,tokenauth=TRUE,other=a=b").unwrap();
    assert_eq!(first.gs2_header, "n,a=b=2Cob,");
    assert_eq!(first.authzid.as_deref(), Some("b,ob"));
    assert_eq!(first.username, "b,ob");
    assert_eq!(first.extension("other"), Some("a=b"));
    assert!(first.token_authenticated());
    assert_eq!(first.bare, "n=b=2Cob,r=x,tokenauth=TRUE,other=a=b");
}

#[test]
fn the_last_extension_of_a_name_wins() {
    let first = ClientFirst::parse(b"n,,n=u,r=x,tokenauth=true,tokenauth=false").unwrap();
    assert!(!first.token_authenticated());
}

#[test]
fn client_first_refusals() {
    let bad: &[(&[u8], &str)] = &[
        (b"", "the gs2 header does not start with `n,`"),
        (b"n,n=user,r=x", "the gs2 header has no `,` after `n,`"),
        (b"n,a=user", "the gs2 header does not end with `,`"),
        (b"n,a=,n=user,r=x", "the authzid is empty or badly escaped"),
        (b"n,,r=x,n=user", "the user name (`n=`) is missing"),
        (b"n,,n=,r=x", "the user name is empty or badly escaped"),
        (b"n,,n=us=er,r=x", "the user name is empty or badly escaped"),
        (b"n,,n=user", "the nonce (`r=`) is missing"),
        (b"n,,n=user,r=", "the nonce is empty or not printable"),
        (b"n,,n=user,r=a b", "the nonce is empty or not printable"),
        (b"n,,n=user,r=x,", "an extension is not `name=value`"),
        (b"n,,n=user,r=x,1a=b", "an extension is not `name=value`"),
        (b"n,,n=user,r=x,a=", "an extension is not `name=value`"),
        (
            b"n,,m=ext,n=user,r=x",
            "mandatory extensions (`m=`) are not supported",
        ),
        (
            "n,,n=j\u{f6}rg,r=x".as_bytes(),
            "not ASCII text without NUL",
        ),
        (b"n,,n=us\0er,r=x", "not ASCII text without NUL"),
    ];
    for (message, reason) in bad {
        match ClientFirst::parse(message) {
            Err(AuthError::InvalidClientFirst { reason: got }) => {
                assert_eq!(got, *reason, "for {:?}", String::from_utf8_lossy(message))
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(message)),
        }
    }
}

#[test]
fn channel_binding_is_refused() {
    for (message, flag) in [
        (&b"y,,n=user,r=x"[..], 'y'),
        (b"p=tls-unique,,n=user,r=x", 'p'),
    ] {
        let err = ClientFirst::parse(message).unwrap_err();
        assert!(
            matches!(err, AuthError::ChannelBindingUnsupported { flag: f } if f == flag),
            "{err:?}"
        );
    }
}

#[test]
fn client_final_fields_and_refusals() {
    let last = ClientFinal::parse(b"c=biws,r=abc,ext=1,p=AAEC").unwrap();
    assert_eq!(last.channel_binding, b"n,,");
    assert_eq!(last.nonce, "abc");
    assert_eq!(last.proof, vec![0, 1, 2]);
    assert_eq!(last.without_proof, "c=biws,r=abc,ext=1");

    let bad: &[(&[u8], &str)] = &[
        (b"", "the proof (`p=`) is missing"),
        (b"c=biws,r=abc", "the proof (`p=`) is not last"),
        (b"c=biws,r=abc,p=AAE", "the proof is not base64"),
        (b"c=biws,r=abc,p=AA=C", "the proof is not base64"),
        (
            b"r=abc,c=biws,p=AAEC",
            "the channel binding (`c=`) is missing",
        ),
        (b"c=biw,r=abc,p=AAEC", "the channel binding is not base64"),
        (b"c=biws,p=AAEC", "the nonce (`r=`) is missing"),
        (b"c=biws,r=,p=AAEC", "the nonce is empty or not printable"),
        (
            b"c=biws,r=abc,=x,p=AAEC",
            "an extension is not `name=value`",
        ),
        (
            "c=biws,r=\u{e9},p=AAEC".as_bytes(),
            "not ASCII text without NUL",
        ),
    ];
    for (message, reason) in bad {
        match ClientFinal::parse(message) {
            Err(AuthError::InvalidClientFinal { reason: got }) => {
                assert_eq!(got, *reason, "for {:?}", String::from_utf8_lossy(message))
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(message)),
        }
    }
}

#[test]
fn server_messages() {
    assert_eq!(
        server_first("abc", b"salt", 4096),
        "r=abc,s=c2FsdA==,i=4096"
    );
    assert_eq!(server_final(&[0xff, 0x00]), "v=/wA=");
    assert_eq!(
        ScramServerError::InvalidProof.server_final_message(),
        "e=invalid-proof"
    );
    assert_eq!(
        ScramServerError::ChannelBindingsDontMatch.server_final_message(),
        "e=channel-bindings-dont-match"
    );
}
