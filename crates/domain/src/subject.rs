//! Event subjects and webhook subscription patterns (NATS style): their grammar, whether a
//! pattern matches a subject, and whether two patterns overlap (spec §4.17, §6; architecture §4).
//!
//! A subject names one kind of event as dot-separated tokens `<area>.<entity>.<action>`, e.g.
//! `user.login` or `filesystem.file.create`. A pattern is a subject filter a webhook subscribes
//! with: `*` as a whole token stands for exactly one token, and a final `>` token for one or more
//! remaining tokens (`a.>` matches `a.b` and `a.b.c`, not `a`). Two patterns overlap when some
//! subject matches both; a webhook whose subscriptions overlap is refused, because one event
//! would otherwise be delivered twice to the same URL.

use std::fmt;
use std::str::FromStr;

/// The longest subject or pattern, in characters.
const MAX_LEN: usize = 255;
/// The most tokens a subject or pattern may have (a final `>` counts as one).
const MAX_TOKENS: usize = 16;

/// A character allowed inside a literal token. The spec's "letters, digits" are read as ASCII:
/// the event catalogue is ASCII, and it keeps literal matching a plain byte comparison with no
/// Unicode normalisation or case questions.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Checks what subjects and patterns share: non-empty, not too long, allowed characters only,
/// not too many tokens, no empty token. `extra` tells which characters beyond the token
/// characters and `.` the caller accepts at this stage; `allowed` says them all in the error.
fn check_common<'a>(
    s: &'a str,
    extra: impl Fn(char) -> bool,
    allowed: &str,
) -> Result<Vec<&'a str>, String> {
    if s.is_empty() {
        return Err("must not be empty".to_owned());
    }
    // Characters, not bytes: the limit is stated in characters, and a non-ASCII string should
    // be told about its bad character rather than about a length it may not have.
    if s.chars().count() > MAX_LEN {
        return Err(format!("is longer than {MAX_LEN} characters"));
    }
    if let Some(c) = s
        .chars()
        .find(|&c| !(is_token_char(c) || c == '.' || extra(c)))
    {
        return Err(format!("contains {c:?}; only {allowed} are allowed"));
    }
    let tokens: Vec<&str> = s.split('.').collect();
    if tokens.len() > MAX_TOKENS {
        return Err(format!("has more than {MAX_TOKENS} dot-separated tokens"));
    }
    if tokens.iter().any(|t| t.is_empty()) {
        return Err("has an empty token (a leading, trailing or doubled `.`)".to_owned());
    }
    Ok(tokens)
}

/// The name of one kind of event, e.g. `device.wipe.complete`. Holds only literal tokens.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Subject(String);

impl Subject {
    /// Parses a subject: 1 to 16 non-empty dot-separated tokens of ASCII letters, digits, `_`
    /// and `-`, at most 255 characters. The error names the problem.
    pub fn parse(s: &str) -> Result<Subject, String> {
        check_common(
            s,
            |_| false,
            "letters, digits, `_`, `-` and `.` between tokens",
        )?;
        Ok(Subject(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn tokens(&self) -> impl Iterator<Item = &str> {
        self.0.split('.')
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Subject {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Subject::parse(s)
    }
}

/// One token of a pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Token {
    /// Matches exactly this token (case-sensitive).
    Literal(String),
    /// `*`: any one token.
    Any,
    /// `>`, always last: one or more remaining tokens.
    Rest,
}

/// A webhook subscription: a subject filter such as `filesystem.file.create`, `user.*` or
/// `filesystem.>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubjectPattern {
    /// The text as written; kept so that `as_str` and Display give back exactly what was stored.
    text: String,
    tokens: Vec<Token>,
}

impl SubjectPattern {
    /// Parses a pattern (spec §4.17): non-empty; only letters, digits, `.`, `*`, `_`, `-`,
    /// optionally ending in `>`; no empty token; `*` only as a whole token; `>` only as the whole
    /// last token; at most 255 characters and 16 tokens. The error names the problem in words
    /// fit to follow `subscription "x": `.
    pub fn parse(s: &str) -> Result<SubjectPattern, String> {
        let tokens = check_common(
            s,
            |c| c == '*' || c == '>',
            "letters, digits, `.`, `*`, `_`, `-` and a final `>`",
        )?;
        let last = tokens.len() - 1;
        let tokens = tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| match t {
                "*" => Ok(Token::Any),
                ">" if i == last => Ok(Token::Rest),
                _ if t.contains('>') => {
                    Err("`>` is allowed only as the whole last token (as in `a.>`)".to_owned())
                }
                _ if t.contains('*') => {
                    Err("`*` is allowed only as a whole token (as in `a.*.c`)".to_owned())
                }
                _ => Ok(Token::Literal(t.to_owned())),
            })
            .collect::<Result<Vec<Token>, String>>()?;
        Ok(SubjectPattern {
            text: s.to_owned(),
            tokens,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `subject` is one this pattern subscribes to.
    pub fn matches(&self, subject: &Subject) -> bool {
        let mut rest = subject.tokens();
        for token in &self.tokens {
            match token {
                // NATS semantics: `>` needs at least one token, so `a.>` does not match `a`.
                Token::Rest => return rest.next().is_some(),
                Token::Any => {
                    if rest.next().is_none() {
                        return false;
                    }
                }
                Token::Literal(l) => {
                    if rest.next() != Some(l.as_str()) {
                        return false;
                    }
                }
            }
        }
        rest.next().is_none()
    }

    /// Whether at least one subject matches both patterns (so an event would be delivered
    /// twice to a webhook subscribed with both).
    ///
    /// Decided token by token rather than by search: at each position both sides consume one
    /// token, literals must agree, `*` agrees with anything, and a `>` on either side agrees
    /// with whatever the other side still has, provided that is at least one token (every
    /// non-empty pattern tail matches some non-empty run of tokens). The size limits of a
    /// subject are not taken into account: the witness subject may be longer than either
    /// pattern, and refusing such a pair anyway errs on the safe side.
    pub fn overlaps(&self, other: &SubjectPattern) -> bool {
        let (mut p, mut q) = (self.tokens.as_slice(), other.tokens.as_slice());
        loop {
            match (p.split_first(), q.split_first()) {
                (None, None) => return true,
                (Some((Token::Rest, _)), Some(_)) | (Some(_), Some((Token::Rest, _))) => {
                    return true
                }
                // One side is used up while the other still needs a token.
                (None, Some(_)) | (Some(_), None) => return false,
                (Some((a, p_rest)), Some((b, q_rest))) => {
                    if let (Token::Literal(x), Token::Literal(y)) = (a, b) {
                        if x != y {
                            return false;
                        }
                    }
                    p = p_rest;
                    q = q_rest;
                }
            }
        }
    }

    /// The first pair `(i, j)`, `i < j`, in lexicographic order, of patterns that overlap;
    /// `None` when all are disjoint. Used to refuse a webhook whose subscriptions overlap and
    /// to name the two offenders.
    pub fn first_overlap(patterns: &[SubjectPattern]) -> Option<(usize, usize)> {
        // Quadratic, which is fine for the handful of subscriptions a webhook carries.
        patterns.iter().enumerate().find_map(|(i, p)| {
            patterns[i + 1..]
                .iter()
                .position(|q| p.overlaps(q))
                .map(|k| (i, i + 1 + k))
        })
    }
}

impl fmt::Display for SubjectPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for SubjectPattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SubjectPattern::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(s: &str) -> Subject {
        Subject::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn pattern(s: &str) -> SubjectPattern {
        SubjectPattern::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// `n` tokens `t0.t1...`, for the limits.
    fn tokens(n: usize) -> String {
        (0..n)
            .map(|i| format!("t{i}"))
            .collect::<Vec<_>>()
            .join(".")
    }

    #[test]
    fn parses_valid_subjects() {
        let long = format!("a.{}", "b".repeat(MAX_LEN - 2));
        let cases = [
            "user.login",
            "device.wipe.complete",
            "oauth.client.create",
            "filesystem.file.create",
            "a",
            "A-b_C.0-9._.-",
            "UPPER.lower.MiXeD",
            long.as_str(),
        ];
        for input in cases {
            let s = subject(input);
            assert_eq!(s.as_str(), input);
            assert_eq!(s.to_string(), input);
            assert_eq!(input.parse::<Subject>().as_ref(), Ok(&s));
        }
        assert_eq!(subject(&tokens(MAX_TOKENS)).tokens().count(), MAX_TOKENS);
    }

    #[test]
    fn rejects_malformed_subjects() {
        let too_long = "a".repeat(MAX_LEN + 1);
        let too_many = tokens(MAX_TOKENS + 1);
        let cases = [
            ("", "empty"),
            (too_long.as_str(), "longer than 255"),
            (too_many.as_str(), "more than 16"),
            ("a..b", "empty token"),
            (".a", "empty token"),
            ("a.", "empty token"),
            (".", "empty token"),
            ("a.*", "contains '*'"),
            ("a.>", "contains '>'"),
            ("a b", "contains ' '"),
            ("user.lögin", "contains 'ö'"),
            ("a/b", "contains '/'"),
            ("a\u{0}", "contains '\\0'"),
        ];
        for (input, problem) in cases {
            let err = Subject::parse(input).expect_err(input);
            assert!(err.contains(problem), "{input:?}: {err}");
        }
    }

    #[test]
    fn parses_valid_patterns() {
        let long = format!("a.{}", "b".repeat(MAX_LEN - 2));
        let long_rest = format!("{}.>", "b".repeat(MAX_LEN - 2));
        let max_tokens = tokens(MAX_TOKENS);
        let max_tokens_rest = format!("{}.>", tokens(MAX_TOKENS - 1));
        let cases = [
            "filesystem.file.create",
            "filesystem.>",
            "user.*",
            "*",
            ">",
            "*.>",
            "*.*.*",
            "a.*.c",
            "A-b_C.0-9._.-",
            "x.y.z.>",
            long.as_str(),
            long_rest.as_str(),
            max_tokens.as_str(),
            max_tokens_rest.as_str(),
        ];
        for input in cases {
            let p = pattern(input);
            assert_eq!(p.as_str(), input);
            assert_eq!(p.to_string(), input);
            assert_eq!(input.parse::<SubjectPattern>().as_ref(), Ok(&p));
        }
    }

    #[test]
    fn rejects_malformed_patterns_naming_the_problem() {
        let too_long = "a".repeat(MAX_LEN + 1);
        let too_long_rest = format!("{}.>", "a".repeat(MAX_LEN - 1));
        let too_many = tokens(MAX_TOKENS + 1);
        let too_many_rest = format!("{}.>", tokens(MAX_TOKENS));
        let cases = [
            ("", "must not be empty"),
            (too_long.as_str(), "longer than 255 characters"),
            (too_long_rest.as_str(), "longer than 255 characters"),
            (too_many.as_str(), "more than 16"),
            (too_many_rest.as_str(), "more than 16"),
            ("a..b", "empty token"),
            (".a", "empty token"),
            ("a.", "empty token"),
            (".", "empty token"),
            ("..", "empty token"),
            (".>", "empty token"),
            ("a..>", "empty token"),
            ("a.b*", "`*` is allowed only as a whole token"),
            ("*a", "`*` is allowed only as a whole token"),
            ("a.**", "`*` is allowed only as a whole token"),
            ("a>", "`>` is allowed only as the whole last token"),
            ("a.>.b", "`>` is allowed only as the whole last token"),
            (">.a", "`>` is allowed only as the whole last token"),
            ("a.>>", "`>` is allowed only as the whole last token"),
            ("a.*>", "`>` is allowed only as the whole last token"),
            (">>", "`>` is allowed only as the whole last token"),
            ("a b", "contains ' '"),
            ("a.b c", "contains ' '"),
            ("a/b", "contains '/'"),
            ("a,b", "contains ','"),
            ("a.?", "contains '?'"),
            ("user.lögin", "contains 'ö'"),
            ("a\tb", "contains '\\t'"),
            ("a.#", "contains '#'"),
        ];
        for (input, problem) in cases {
            let err = SubjectPattern::parse(input).expect_err(input);
            assert!(err.contains(problem), "{input:?}: {err}");
            // The message follows `subscription "x": `, so it names the problem only.
            assert!(!err.ends_with('.'), "{input:?}: {err}");
        }
    }

    #[test]
    fn matches_subjects() {
        let cases = [
            ("a", "a", true),
            ("a", "b", false),
            ("a", "A", false),
            ("a", "a.b", false),
            ("a.b", "a", false),
            ("a.b", "a.b", true),
            ("a.b", "a.c", false),
            ("*", "a", true),
            ("*", "a.b", false),
            ("a.*", "a.b", true),
            ("a.*", "a", false),
            ("a.*", "a.b.c", false),
            ("a.*.c", "a.b.c", true),
            ("a.*.c", "a.b.d", false),
            ("*.*", "x.y", true),
            ("*.*", "x", false),
            (">", "a", true),
            (">", "a.b.c", true),
            ("a.>", "a", false),
            ("a.>", "a.b", true),
            ("a.>", "a.b.c", true),
            ("a.>", "b.c", false),
            ("a.b.>", "a.b", false),
            ("a.b.>", "a.b.c.d.e", true),
            ("*.>", "a", false),
            ("*.>", "a.b", true),
            ("a.*.>", "a.b", false),
            ("a.*.>", "a.b.c", true),
            ("filesystem.>", "filesystem.file.create", true),
            ("filesystem.file.create", "filesystem.file.create", true),
            ("filesystem.file.create", "filesystem.file.delete", false),
            ("user.*", "user.login", true),
            ("user.*", "users.login", false),
            ("device.wipe.*", "device.wipe.complete", true),
            ("User.login", "user.login", false),
        ];
        for (p, s, expected) in cases {
            assert_eq!(pattern(p).matches(&subject(s)), expected, "{p} ~ {s}");
        }
    }

    #[test]
    fn decides_overlaps() {
        let cases = [
            ("a.*.c", "a.b.*", true),
            ("a.>", "a", false),
            ("a.>", "a.b", true),
            ("a.>", "a.*.c", true),
            (">", "a", true),
            (">", "a.b.c", true),
            (">", "*", true),
            (">", ">", true),
            (">", "a.>", true),
            ("a.b", "a.c", false),
            ("a.*", "a.b.c", false),
            ("*.b", "a.*", true),
            ("a.b", "a.b", true),
            ("a.*.c", "a.*.c", true),
            ("a.>", "a.>", true),
            ("a.b.>", "a.*.c.d", true),
            ("a.b.>", "a.c.>", false),
            ("a.b.>", "a.>", true),
            ("a.>", "b.>", false),
            ("a.>", "*", false),
            ("a.>", "*.*", true),
            ("*.>", "a", false),
            ("*", "a", true),
            ("*", "a.b", false),
            ("*.*", "a.b", true),
            ("a.b.c", "a.b", false),
            ("a.b.c", "a.b.>", true),
            ("a.b", "a.b.>", false),
            ("A", "a", false),
            ("filesystem.file.create", "filesystem.>", true),
            ("filesystem.file.create", "filesystem.folder.>", false),
            ("user.*", "user.login", true),
            ("user.*", "device.>", false),
        ];
        for (p, q, expected) in cases {
            let (p, q) = (pattern(p), pattern(q));
            assert_eq!(p.overlaps(&q), expected, "{p} vs {q}");
            assert_eq!(q.overlaps(&p), expected, "{q} vs {p} (symmetry)");
        }
    }

    /// The tokens of the universe's subjects.
    const ALPHABET: [&str; 4] = ["a", "b", "c", "x"];
    /// The most tokens of the universe's subjects.
    const UNIVERSE_TOKENS: usize = 5;

    /// Every subject of 1 to 5 tokens over the alphabet {a, b, c, x}.
    fn universe() -> Vec<Subject> {
        let mut level: Vec<String> = ALPHABET.iter().map(|t| t.to_string()).collect();
        let mut all = level.clone();
        for _ in 1..UNIVERSE_TOKENS {
            level = level
                .iter()
                .flat_map(|s| ALPHABET.iter().map(move |t| format!("{s}.{t}")))
                .collect();
            all.extend(level.iter().cloned());
        }
        all.iter().map(|s| subject(s)).collect()
    }

    /// Cross-checks the token-by-token algebra of `overlaps` against `matches`: two patterns
    /// overlap exactly when some subject matches both. The universe holds a witness for every
    /// overlapping pair below: a common subject needs no more tokens than the longer pattern
    /// (a `>` can stop after one), each of its tokens is either forced to a literal of a
    /// pattern or free, and the patterns only name alphabet tokens and have at most 5 tokens.
    #[test]
    fn overlaps_agrees_with_matches_over_a_universe() {
        let patterns = [
            ">",
            "*",
            "a",
            "b",
            "x",
            "a.b",
            "a.c",
            "*.b",
            "a.*",
            "*.*",
            "a.>",
            "b.>",
            "*.>",
            "a.b.c",
            "a.*.c",
            "a.b.*",
            "*.*.*",
            "a.b.>",
            "a.c.>",
            "*.b.>",
            "a.*.>",
            "c.*.a",
            "a.*.c.b",
            "a.b.c.a",
            "*.*.*.>",
            "a.b.c.b.a",
            "a.*.*.*.*",
            "*.*.*.*.>",
            "b.a.c",
            "c.>",
            "x.*.x",
        ]
        .map(pattern);
        // The completeness conditions stated above.
        for p in &patterns {
            let tokens: Vec<&str> = p.as_str().split('.').collect();
            assert!(tokens.len() <= UNIVERSE_TOKENS, "{p} is too long");
            for t in tokens {
                assert!(
                    t == "*" || t == ">" || ALPHABET.contains(&t),
                    "{p} names {t}"
                );
            }
        }
        let universe = universe();
        assert_eq!(universe.len(), 4 + 16 + 64 + 256 + 1024);
        // The set of subjects each pattern matches, computed once.
        let matched: Vec<Vec<bool>> = patterns
            .iter()
            .map(|p| universe.iter().map(|s| p.matches(s)).collect())
            .collect();
        let mut overlapping = 0;
        for (i, p) in patterns.iter().enumerate() {
            // Every valid pattern matches something, so it overlaps itself.
            assert!(matched[i].iter().any(|&m| m), "{p} matches nothing");
            for (j, q) in patterns.iter().enumerate() {
                let witnessed = matched[i].iter().zip(&matched[j]).any(|(&a, &b)| a && b);
                assert_eq!(p.overlaps(q), witnessed, "{p} vs {q}");
                overlapping += usize::from(witnessed);
            }
        }
        // Both answers must occur, or the check proves little.
        let pairs = patterns.len() * patterns.len();
        assert!(overlapping > pairs / 10 && overlapping < pairs * 9 / 10);
    }

    #[test]
    fn finds_the_first_overlapping_pair() {
        // The patterns, and the pair expected.
        type Case = (&'static [&'static str], Option<(usize, usize)>);
        let cases: [Case; 9] = [
            (&[], None),
            (&["a.>"], None),
            (&["a.b", "a.c"], None),
            (&["a.b", "a.b"], Some((0, 1))),
            (&["filesystem.file.create", "filesystem.>"], Some((0, 1))),
            (&["a.>", "a", "b.*"], None),
            // (0, 3) comes before (1, 2) in lexicographic order.
            (&["a.b", "c.d", "c.>", "a.*"], Some((0, 3))),
            (&["a.b", "c.d", "c.>", "e"], Some((1, 2))),
            (&["x", "y", "z", ">"], Some((0, 3))),
        ];
        for (input, expected) in cases {
            let patterns: Vec<SubjectPattern> = input.iter().map(|s| pattern(s)).collect();
            assert_eq!(
                SubjectPattern::first_overlap(&patterns),
                expected,
                "{input:?}"
            );
        }
    }
}
