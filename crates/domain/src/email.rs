//! A validated, lower-cased email address.

use std::fmt;
use validator::ValidateEmail;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Email(String);

impl Email {
    pub fn parse(s: &str) -> Result<Email, String> {
        let s = s.trim();
        if s.len() > 254 || !s.validate_email() {
            return Err(format!("`{s}` is not an email address"));
        }
        Ok(Email(s.to_ascii_lowercase()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_lowercases() {
        assert_eq!(
            Email::parse(" Ann@Example.COM ").unwrap().as_str(),
            "ann@example.com"
        );
        assert!(Email::parse("nope").is_err());
        assert!(Email::parse("a@").is_err());
        assert!(Email::parse(&format!("{}@x.io", "a".repeat(300))).is_err());
    }
}
