//! The principal of a client that showed a certificate: `User:` and the certificate's subject
//! in RFC 2253 form, as Kafka's default principal builder (with the default
//! `ssl.principal.mapping.rules`) takes it from the JDK's `X500Principal.getName()`.
//!
//! The certificate was verified by the TLS handshake; this reads only its subject, with a
//! small DER walk rather than a full X.509 parser.

use std::fmt::Write;

const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_OID: u8 = 0x06;
const TAG_VERSION: u8 = 0xA0;

/// Attribute keywords RFC 2253 names (and the JDK prints); other attributes appear as their
/// dotted OID with the value's DER in hex.
const KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// `User:<RFC 2253 subject>` of a DER certificate; `None` when it is not well-formed DER.
pub fn principal_of_certificate(certificate_der: &[u8]) -> Option<String> {
    let (certificate, _) = read(certificate_der, TAG_SEQUENCE)?;
    let (mut tbs, _) = read(certificate, TAG_SEQUENCE)?;
    if tbs.first() == Some(&TAG_VERSION) {
        tbs = any(tbs)?.2;
    }
    // serialNumber, signature, issuer, validity; then the subject.
    for _ in 0..4 {
        tbs = any(tbs)?.2;
    }
    let (subject, _) = read(tbs, TAG_SEQUENCE)?;
    Some(format!("User:{}", rfc2253(subject)?))
}

/// A Name's RDNs, last first (RFC 2253 reverses the DER order), joined by `,`; the
/// attributes of one multi-valued RDN joined by `+`.
fn rfc2253(mut name: &[u8]) -> Option<String> {
    let mut rdns = Vec::new();
    while !name.is_empty() {
        let (mut set, rest) = read(name, TAG_SET)?;
        name = rest;
        let mut attributes = Vec::new();
        while !set.is_empty() {
            let (attribute, rest) = read(set, TAG_SEQUENCE)?;
            set = rest;
            let (oid, value) = read(attribute, TAG_OID)?;
            let oid = dotted_oid(oid)?;
            let (tag, content, rest) = any(value)?;
            if !rest.is_empty() {
                return None;
            }
            let keyword = KEYWORDS.iter().find(|(o, _)| *o == oid).map(|(_, k)| *k);
            let text = match (keyword, string_value(tag, content)) {
                (Some(keyword), Some(text)) => format!("{keyword}={}", escape(&text)),
                (keyword, _) => format!("{}=#{}", keyword.unwrap_or(&oid), hex(value)),
            };
            attributes.push(text);
        }
        rdns.push(attributes.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// One TLV of tag `tag`: its content and what follows it.
fn read(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, content, rest) = any(input)?;
    (found == tag).then_some((content, rest))
}

/// One TLV of any (single-byte) tag: the tag, its content and what follows it.
fn any(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, input) = input.split_first()?;
    let (&first, mut input) = input.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || input.len() < count {
            return None;
        }
        let (bytes, rest) = input.split_at(count);
        input = rest;
        bytes.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b))
    };
    if input.len() < len {
        return None;
    }
    let (content, rest) = input.split_at(len);
    Some((tag, content, rest))
}

fn dotted_oid(content: &[u8]) -> Option<String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut value: u64 = 0;
    for (i, b) in content.iter().enumerate() {
        value = value.checked_mul(128)? | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (value / 40).min(2);
                arcs.push(first);
                arcs.push(value - first * 40);
            } else {
                arcs.push(value);
            }
            value = 0;
        } else if i + 1 == content.len() {
            return None;
        }
    }
    if arcs.is_empty() {
        return None;
    }
    Some(
        arcs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// The text of a directory string; `None` for a type printed in hex instead.
fn string_value(tag: u8, content: &[u8]) -> Option<String> {
    match tag {
        // UTF8String, PrintableString, IA5String
        0x0C | 0x13 | 0x16 => String::from_utf8(content.to_vec()).ok(),
        // TeletexString, read as Latin-1 as the JDK does
        0x14 => Some(content.iter().map(|b| char::from(*b)).collect()),
        // BMPString
        0x1E => {
            let units = content.chunks_exact(2);
            if !units.remainder().is_empty() {
                return None;
            }
            String::from_utf16(
                &units
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect::<Vec<_>>(),
            )
            .ok()
        }
        _ => None,
    }
}

/// RFC 2253 section 2.4: a backslash before `,+"\<>;`, a leading `#` or space and a
/// trailing space.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DnType, DnValue, KeyPair};

    use super::*;

    fn certificate_with(subject: &[(DnType, &str)]) -> Vec<u8> {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_subject_is_named_last_rdn_first() {
        let der = certificate_with(&[
            (DnType::CountryName, "DE"),
            (DnType::OrganizationName, "Example"),
            (DnType::OrganizationalUnitName, "Streams"),
            (DnType::CommonName, "app-1"),
        ]);
        assert_eq!(
            principal_of_certificate(&der).unwrap(),
            "User:CN=app-1,OU=Streams,O=Example,C=DE"
        );
    }

    #[test]
    fn special_characters_are_escaped() {
        let der = certificate_with(&[
            (DnType::OrganizationName, "Smith, Jones+Co"),
            (DnType::CommonName, "#lead "),
        ]);
        assert_eq!(
            principal_of_certificate(&der).unwrap(),
            "User:CN=\\#lead\\ ,O=Smith\\, Jones\\+Co"
        );
    }

    #[test]
    fn an_attribute_without_a_keyword_is_its_oid_and_hex() {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(
            DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
            DnValue::Ia5String("a@b".try_into().unwrap()),
        );
        params.distinguished_name.push(DnType::CommonName, "x");
        let key = KeyPair::generate().unwrap();
        let der = params.self_signed(&key).unwrap().der().to_vec();
        assert_eq!(
            principal_of_certificate(&der).unwrap(),
            "User:CN=x,1.2.840.113549.1.9.1=#1603614062"
        );
    }

    #[test]
    fn malformed_der_gives_none() {
        assert_eq!(principal_of_certificate(&[]), None);
        assert_eq!(principal_of_certificate(&[0x30, 0x85, 1, 2, 3, 4, 5]), None);
        let der = certificate_with(&[(DnType::CommonName, "x")]);
        assert_eq!(principal_of_certificate(&der[..der.len() / 2]), None);
    }
}
