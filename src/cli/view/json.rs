//! The few JSON answers the viewer gives, written by hand: a handful of flat objects do
//! not warrant a serialisation framework.

use std::fmt::Write as _;

/// `text` as a JSON string literal, quotes included.
pub fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An object from `(key, already-encoded value)` pairs.
pub fn object(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(key, value)| format!("{}:{value}", string(key)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// An array of already-encoded values.
pub fn array(values: impl IntoIterator<Item = String>) -> String {
    let values: Vec<String> = values.into_iter().collect();
    format!("[{}]", values.join(","))
}

/// `Some(value)` encoded, `None` as `null`.
pub fn or_null(value: Option<String>) -> String {
    value.unwrap_or_else(|| "null".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(string("l1\nl2\t\u{1}"), r#""l1\nl2\t\u0001""#);
        assert_eq!(string(""), r#""""#);
        assert_eq!(string("é"), "\"é\"");
    }

    #[test]
    fn objects_and_arrays_nest() {
        let inner = array(["1".to_string(), "null".to_string()]);
        assert_eq!(
            object(&[("a", string("x")), ("b", inner), ("c", or_null(None))]),
            r#"{"a":"x","b":[1,null],"c":null}"#
        );
        assert_eq!(array(Vec::new()), "[]");
    }
}
