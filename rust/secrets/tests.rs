use super::*;

fn token(keyword: &[u8], body: &[u8], least: usize) -> Trigger {
    Trigger {
        keyword: keyword.to_vec(),
        ignore_case: false,
        kind: Kind::Token,
        chars: Set::of(body),
        least,
        gap: 0,
        left: Set::of(b""),
        left_least: 0,
    }
}

fn alnum() -> Vec<u8> {
    (b'A'..=b'Z')
        .chain(b'a'..=b'z')
        .chain(b'0'..=b'9')
        .collect()
}

#[test]
fn a_keyword_with_a_long_enough_body_keeps_its_line_only() {
    let p = Prefilter::new(vec![token(b"ghp_", &alnum(), 36)], false).unwrap();
    let body = "a1".repeat(18);
    let buf = format!("clean line\nsecret ghp_{body} here\nghp_short\n");
    let lines = p.lines(buf.as_bytes());
    assert_eq!(lines, vec![(11, 11 + 5 + 2 + 4 + 36 + 5)]);
}

#[test]
fn a_base64_run_is_decoded_and_read() {
    let p = Prefilter::new(vec![token(b"ghp_", &alnum(), 36)], false).unwrap();
    let secret = format!("ghp_{}", "a1".repeat(18));
    let mut encoded = String::new();
    // base64 of the secret, made by hand with the decoder's own table read backwards
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in secret.as_bytes().chunks(3) {
        let mut acc = 0u32;
        for (i, &b) in chunk.iter().enumerate() {
            acc |= u32::from(b) << (16 - 8 * i);
        }
        for i in 0..=chunk.len() {
            encoded.push(alphabet[(acc >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    let mut back = Vec::new();
    decode_into(encoded.as_bytes(), &mut back);
    assert_eq!(back, secret.as_bytes());
    assert!(p.keeps(format!("echo {encoded} | base64 -d").as_bytes()));
    assert!(!p.keeps(format!("echo x{} | base64 -d", &encoded[1..]).as_bytes()));
}

#[test]
fn escapes_that_could_hide_a_keyword_keep_a_line() {
    let p = Prefilter::new(vec![token(b"ghp_", &alnum(), 36)], false).unwrap();
    assert!(p.keeps(br#"{"a":"\u0067hp_"}"#));
    assert!(p.keeps(br#"{"a":"x\/y"}"#));
    assert!(!p.keeps(br#"{"a":"\u001b[0m \n \""}"#));
    let unicode = Prefilter::new(vec![token(b"ghp_", &alnum(), 36)], true).unwrap();
    assert!(unicode.keeps(br#"{"a":"\u001b"}"#));
}

#[test]
fn a_secret_split_between_text_parts_is_read_joined() {
    let p = Prefilter::new(vec![token(b"ghp_", &alnum(), 36)], false).unwrap();
    let line = format!(
        r#"{{"content":[{{"text":"key: gh","type":"text"}},{{"text":"p_{}","type":"text"}}]}}"#,
        "a1".repeat(18)
    );
    assert!(p.keeps(line.as_bytes()));
}

#[test]
fn an_assignment_needs_an_operator_and_a_long_enough_value() {
    let assign = Trigger {
        keyword: b"pass".to_vec(),
        ignore_case: true,
        kind: Kind::Assign,
        chars: Set::of(&alnum()),
        least: 6,
        gap: 0,
        left: Set::of(b""),
        left_least: 0,
    };
    let p = Prefilter::new(vec![assign], false).unwrap();
    assert!(p.keeps(br#"{"DB_PASSWORD": "hunter22"}"#));
    assert!(p.keeps(br#"{"cmd":"export PASS=\"abc123\""}"#));
    assert!(!p.keeps(b"12 passed, 1 failed"));
    assert!(!p.keeps(b"password = abc"));
}

#[test]
fn a_short_keyword_is_refused() {
    assert!(Prefilter::new(vec![token(b"ab", b"a", 1)], false).is_err());
}
