//! The web application firewall: rules are data (a JSON file), each a regular expression over
//! parts of the request, checked on the raw and on the percent-decoded text (decoded up to three
//! times, to see through double encoding). A match answers 490 `Request blocked by WAF`.

use serde::Deserialize;

/// The rules Coffer ships: path traversal and NUL bytes.
pub const DEFAULT_RULES: &str = include_str!("../../waf/default-rules.json");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Path,
    Query,
    Headers,
}

#[derive(Debug, Deserialize)]
struct RuleFile {
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Deserialize)]
struct RuleSpec {
    id: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    targets: Vec<Target>,
    pattern: String,
}

#[derive(Debug)]
pub struct Rule {
    pub id: String,
    targets: Vec<Target>,
    re: regex::bytes::Regex,
}

#[derive(Debug, Default)]
pub struct Waf {
    rules: Vec<Rule>,
}

impl Waf {
    /// Parses a rules file; an invalid file or pattern is an error naming the rule.
    pub fn from_json(json: &str) -> Result<Waf, String> {
        let file: RuleFile = serde_json::from_str(json).map_err(|e| format!("WAF rules: {e}"))?;
        let rules = file
            .rules
            .into_iter()
            .map(|r| {
                let re = regex::bytes::Regex::new(&r.pattern)
                    .map_err(|e| format!("WAF rule {}: {e}", r.id))?;
                Ok(Rule {
                    id: r.id,
                    targets: r.targets,
                    re,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Waf { rules })
    }

    pub fn default_rules() -> Waf {
        Waf::from_json(DEFAULT_RULES).expect("the shipped WAF rules parse")
    }

    /// The id of the first rule the request breaks, if any.
    pub fn check<'a>(
        &self,
        path: &str,
        query: &str,
        headers: impl Iterator<Item = &'a [u8]> + Clone,
    ) -> Option<&str> {
        let path_forms = decoded_forms(path);
        let query_forms = decoded_forms(query);
        for rule in &self.rules {
            for t in &rule.targets {
                let hit = match t {
                    Target::Path => path_forms.iter().any(|p| rule.re.is_match(p.as_bytes())),
                    Target::Query => query_forms.iter().any(|q| rule.re.is_match(q.as_bytes())),
                    Target::Headers => headers.clone().any(|h| rule.re.is_match(h)),
                };
                if hit {
                    return Some(&rule.id);
                }
            }
        }
        None
    }
}

/// The text as sent and its successive percent-decodings (also `+` as space in queries).
fn decoded_forms(raw: &str) -> Vec<String> {
    let mut forms = vec![raw.to_string()];
    let mut cur = raw.to_string();
    for _ in 0..3 {
        let next = percent_decode(&cur);
        if next == cur {
            break;
        }
        forms.push(next.clone());
        cur = next;
    }
    forms
}

pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(v) = hex {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(path: &str, query: &str) -> bool {
        Waf::default_rules()
            .check(path, query, std::iter::empty())
            .is_some()
    }

    #[test]
    fn blocks_traversal_and_nul() {
        for (p, q) in [
            ("/rest/../etc/passwd", ""),
            ("/rest/%2e%2e/etc", ""),
            ("/rest/%252e%252e/etc", ""),
            ("/rest/devices/..%5c..%5cwin", ""),
            ("/rest/devices", "name=../../etc/passwd"),
            ("/rest/devices", "name=%2e%2e%2fsecret"),
            ("/rest/devices/a%00b", ""),
            ("/rest/devices", "x=%00"),
        ] {
            assert!(blocked(p, q), "{p}?{q}");
        }
    }

    #[test]
    fn passes_legitimate_input() {
        for (p, q) in [
            ("/rest/devices", "installTagId:contains=abc&orderBy=id:desc"),
            ("/rest/locations", "name=eu..west"),
            ("/rest/clients", "name:contains=a.b.c"),
            ("/rest/users/me", ""),
            ("/rest/devices/tag.with.dots/wipe", ""),
            ("/rest/devices", "installTagId=%E2%9C%93"),
            ("/rest/devices/100%25", ""),
        ] {
            assert!(!blocked(p, q), "{p}?{q}");
        }
    }

    #[test]
    fn header_rule_and_bad_files() {
        let waf = Waf::default_rules();
        let bad: &[u8] = b"a\0b";
        assert_eq!(waf.check("/", "", [bad].into_iter()), Some("nul-byte"));
        assert!(Waf::from_json("{").is_err());
        assert!(
            Waf::from_json(r#"{"rules":[{"id":"x","targets":["path"],"pattern":"("}]}"#)
                .unwrap_err()
                .contains("x")
        );
        let custom = Waf::from_json(
            r#"{"rules":[{"id":"no-admin","targets":["path"],"pattern":"^/rest/admin"}]}"#,
        )
        .unwrap();
        assert!(custom
            .check("/rest/admin/users", "", std::iter::empty())
            .is_some());
    }
}
