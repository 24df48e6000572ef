//! LDAP search filters built from user input, escaped per RFC 4515 so that a value can never
//! change the filter's structure (`*`, `(`, `)`, `\` and NUL, and other control bytes, become
//! `\XX`).

/// Escapes a value for use inside an LDAP filter assertion.
pub fn escape_filter_value(value: &str) -> String {
    let mut out = Vec::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'*' | b'(' | b')' | b'\\' | 0..=0x1f | 0x7f => {
                out.extend_from_slice(format!("\\{b:02x}").as_bytes())
            }
            _ => out.push(b),
        }
    }
    // Only ASCII bytes were replaced, so the result is as valid UTF-8 as the input.
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory search of `GET /rest/users/ldapSearch`: entries whose email or name attribute
/// contains the value, e.g. `(|(mail=*ann*)(cn=*ann*))`.
pub fn contains_any(attributes: &[&str], value: &str) -> String {
    let v = escape_filter_value(value);
    let terms: String = attributes.iter().map(|a| format!("({a}=*{v}*)")).collect();
    format!("(|{terms})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_rfc_4515_characters() {
        // The examples of RFC 4515 §4.
        assert_eq!(
            escape_filter_value("Parens R Us (for all your parenthetical needs)"),
            "Parens R Us \\28for all your parenthetical needs\\29"
        );
        assert_eq!(escape_filter_value("*"), "\\2a");
        assert_eq!(escape_filter_value("C:\\MyFile"), "C:\\5cMyFile");
        assert_eq!(escape_filter_value("a\0b"), "a\\00b");
        assert_eq!(escape_filter_value("Lučić"), "Lučić");
        assert_eq!(
            escape_filter_value("plain@example.com"),
            "plain@example.com"
        );
    }

    #[test]
    fn injection_cannot_widen_the_search() {
        let f = contains_any(&["mail", "cn"], "*)(uid=*))(|(uid=*");
        assert_eq!(f, "(|(mail=*\\2a\\29\\28uid=\\2a\\29\\29\\28|\\28uid=\\2a*)(cn=*\\2a\\29\\28uid=\\2a\\29\\29\\28|\\28uid=\\2a*))");
        // Balanced: the value added no parentheses of its own.
        assert_eq!(f.matches('(').count(), f.matches(')').count());
        assert_eq!(f.matches('(').count(), 3);
    }
}
