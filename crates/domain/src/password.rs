//! The password policy (a system setting) and the check every new password passes.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PasswordPolicy {
    pub enabled: bool,
    pub min_length: u32,
    pub min_numeric: u32,
    pub min_lower: u32,
    pub min_upper: u32,
    pub min_special: u32,
    pub allow_browser_autofill: bool,
}

impl Default for PasswordPolicy {
    fn default() -> Self {
        PasswordPolicy {
            enabled: true,
            min_length: 8,
            min_numeric: 1,
            min_lower: 1,
            min_upper: 1,
            min_special: 0,
            allow_browser_autofill: true,
        }
    }
}

/// Passwords longer than this are refused whatever the policy, so hashing stays bounded.
pub const MAX_PASSWORD_LENGTH: usize = 256;

impl PasswordPolicy {
    /// Checks a password; the error lists every rule it breaks.
    pub fn check(&self, password: &str) -> Result<(), Vec<String>> {
        let mut broken = Vec::new();
        if password.is_empty() {
            broken.push("the password must not be empty".to_string());
        }
        if password.chars().count() > MAX_PASSWORD_LENGTH {
            broken.push(format!("at most {MAX_PASSWORD_LENGTH} characters"));
        }
        if self.enabled {
            let count = |f: fn(&char) -> bool| password.chars().filter(f).count() as u32;
            let rules = [
                (
                    password.chars().count() as u32,
                    self.min_length,
                    "characters",
                ),
                (count(char::is_ascii_digit), self.min_numeric, "digits"),
                (
                    count(|c| c.is_lowercase()),
                    self.min_lower,
                    "lower-case letters",
                ),
                (
                    count(|c| c.is_uppercase()),
                    self.min_upper,
                    "upper-case letters",
                ),
                (
                    count(|c| !c.is_alphanumeric() && !c.is_whitespace()),
                    self.min_special,
                    "special characters",
                ),
            ];
            for (have, need, what) in rules {
                if have < need {
                    broken.push(format!("at least {need} {what}"));
                }
            }
        }
        if broken.is_empty() {
            Ok(())
        } else {
            Err(broken)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_policy() {
        let p = PasswordPolicy::default();
        assert!(p.check("Abcdefg1").is_ok());
        assert_eq!(
            p.check("abcdefg1").unwrap_err(),
            vec!["at least 1 upper-case letters"]
        );
        assert_eq!(p.check("Ab1").unwrap_err().len(), 1);
        assert!(p.check("").is_err());
        assert!(p.check(&"Aa1".repeat(100)).is_err());
    }

    #[test]
    fn disabled_policy_only_bounds_length() {
        let p = PasswordPolicy {
            enabled: false,
            ..PasswordPolicy::default()
        };
        assert!(p.check("a").is_ok());
        assert!(p.check("").is_err());
    }

    #[test]
    fn special_characters() {
        let p = PasswordPolicy {
            min_special: 2,
            ..PasswordPolicy::default()
        };
        assert!(p.check("Abcdefg1!").is_err());
        assert!(p.check("Abcdefg1!?").is_ok());
    }
}
