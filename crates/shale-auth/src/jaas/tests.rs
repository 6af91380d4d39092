use super::*;

const KAFKA_EXAMPLE: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;

#[test]
fn kafkas_plain_example_parses_into_its_options() {
    let entry = JaasEntry::parse_single(KAFKA_EXAMPLE).unwrap();
    assert_eq!(entry.login_module, PLAIN_LOGIN_MODULE);
    assert_eq!(entry.control_flag, ControlFlag::Required);
    assert_eq!(entry.option("username"), Some("admin"));
    assert_eq!(entry.option("password"), Some("admin-secret"));
    assert_eq!(entry.option("user_admin"), Some("admin-secret"));
    assert_eq!(entry.option("user_alice"), Some("alice-secret"));
    assert_eq!(entry.options.len(), 4);
}

#[test]
fn quoted_values_take_java_escapes_and_either_quote() {
    let text = r#"m.Mod optional a="x\"y\\z" b='it s' c="tab\there" d="\101\7" e="\q" f="\4012";"#;
    let entry = JaasEntry::parse_single(text).unwrap();
    assert_eq!(entry.control_flag, ControlFlag::Optional);
    assert_eq!(entry.option("a"), Some(r#"x"y\z"#));
    assert_eq!(entry.option("b"), Some("it s"));
    assert_eq!(entry.option("c"), Some("tab\there"));
    assert_eq!(entry.option("d"), Some("A\u{7}"));
    assert_eq!(entry.option("e"), Some("q"));
    // An octal escape starting above 3 takes two digits at most.
    assert_eq!(entry.option("f"), Some("\u{20}12"));
}

#[test]
fn two_quoted_strings_in_a_row_are_two_tokens() {
    assert!(matches!(
        JaasEntry::parse_single("m.Mod required b='it''s';"),
        Err(JaasError::ValueMissing { key }) if key == "s"
    ));
}

#[test]
fn unquoted_words_comments_and_flag_case() {
    let text =
        "// leading comment\n com.example.Module_1 SUFFICIENT /* block */ user_bob=bob-pw.2 $k=v ;";
    let entry = JaasEntry::parse_single(text).unwrap();
    assert_eq!(entry.login_module, "com.example.Module_1");
    assert_eq!(entry.control_flag, ControlFlag::Sufficient);
    assert_eq!(entry.option("user_bob"), Some("bob-pw.2"));
    assert_eq!(entry.option("$k"), Some("v"));
    let entry = JaasEntry::parse_single("m.M ReQuIsItE;").unwrap();
    assert_eq!(entry.control_flag, ControlFlag::Requisite);
    assert!(entry.options.is_empty());
}

#[test]
fn a_repeated_key_keeps_its_last_value() {
    let entry = JaasEntry::parse_single(r#"m.M required k="1" k="2";"#).unwrap();
    assert_eq!(entry.option("k"), Some("2"));
}

#[test]
fn several_entries_parse_but_a_listener_value_needs_one() {
    let text = format!("{KAFKA_EXAMPLE} {KAFKA_EXAMPLE}");
    assert_eq!(parse_jaas_config(&text).unwrap().len(), 2);
    let err = JaasEntry::parse_single(&text).unwrap_err();
    assert_eq!(err, JaasError::ModuleCount { count: 2 });
    assert_eq!(
        err.to_string(),
        "JAAS config property contains 2 login modules, should be 1 module"
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let cases: &[(&str, &str)] = &[
        ("", "Login module not specified in JAAS config"),
        (
            "  /* only a comment */ ",
            "Login module not specified in JAAS config",
        ),
        (
            "m.M",
            "Login module control flag not specified in JAAS config",
        ),
        (
            "m.M mandatory;",
            "Invalid login module control flag 'mandatory' in JAAS config",
        ),
        (
            r#"m.M required k="v""#,
            "JAAS config entry not terminated by semi-colon",
        ),
        (
            "m.M required k;",
            "Value not specified for key 'k' in JAAS config",
        ),
        (
            "m.M required k=;",
            "Value not specified for key 'k' in JAAS config",
        ),
        (
            "m.M required k=123;",
            "Value not specified for key 'k' in JAAS config",
        ),
        (
            "m.M required k=\"v",
            "Unterminated quoted value starting at offset 15 of the JAAS config",
        ),
        (
            "m.M required k=\"v\nw\";",
            "Unterminated quoted value starting at offset 15 of the JAAS config",
        ),
        (
            "m.M required /* k",
            "Unterminated /* comment starting at offset 13 of the JAAS config",
        ),
        (
            "m.M required =v;",
            "Option name expected at offset 13 of the JAAS config, found '='",
        ),
        (
            "; m.M required;",
            "Login module class name expected at offset 0 of the JAAS config, found ';'",
        ),
    ];
    for (text, message) in cases {
        let err = parse_jaas_config(text).unwrap_err();
        assert_eq!(err.to_string(), *message, "for {text:?}");
    }
}

#[test]
fn debug_output_hides_option_values() {
    let entry = JaasEntry::parse_single(KAFKA_EXAMPLE).unwrap();
    let shown = format!("{entry:?}");
    assert!(shown.contains("user_alice"));
    assert!(!shown.contains("alice-secret"));
}
