//! HTTP authentication towards a WebDAV server: the `WWW-Authenticate` challenges, and the
//! `Authorization` answers for Basic (RFC 7617) and Digest (RFC 7616: MD5 and SHA-256, their
//! `-sess` forms, `qop=auth`, and the RFC 2069 form without qop).
//!
//! Nothing is sent before the server asks: the first request of a source goes without
//! credentials, the challenge decides the scheme (Digest over Basic, SHA-256 over MD5), and
//! later requests of that source (its connectors share what was learned) answer it directly
//! (Basic as is, preemptively; Digest with the next nonce count).

use base64::Engine;
use md5::Digest as _;

/// One challenge: the scheme (lower case) and its parameters (names lower case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Parses the values of the `WWW-Authenticate` headers (each may hold several challenges).
/// What does not parse ends that header's parsing; the challenges before it are kept.
pub(crate) fn parse_challenges<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
    let mut out = Vec::new();
    for value in values {
        parse_value(value, &mut out);
    }
    out
}

fn parse_value(value: &str, out: &mut Vec<Challenge>) {
    let s: Vec<char> = value.chars().collect();
    let mut i = 0;
    let skip = |i: &mut usize, set: &str| {
        while *i < s.len() && set.contains(s[*i]) {
            *i += 1;
        }
    };
    let token = |i: &mut usize| -> String {
        let start = *i;
        while *i < s.len() && is_tchar(s[*i]) {
            *i += 1;
        }
        s[start..*i].iter().collect()
    };
    loop {
        skip(&mut i, " \t,");
        let scheme = token(&mut i);
        if scheme.is_empty() {
            return;
        }
        let mut challenge = Challenge {
            scheme: scheme.to_ascii_lowercase(),
            params: Vec::new(),
        };
        loop {
            skip(&mut i, " \t");
            let save = i;
            let name = token(&mut i);
            skip(&mut i, " \t");
            if name.is_empty() || i >= s.len() || s[i] != '=' {
                // The next challenge's scheme (or a token68, which no scheme used here has).
                i = save;
                break;
            }
            i += 1;
            skip(&mut i, " \t");
            let value = if i < s.len() && s[i] == '"' {
                i += 1;
                let mut v = String::new();
                loop {
                    match s.get(i) {
                        // Unterminated: the value runs to the end.
                        None => break,
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') if i + 1 < s.len() => {
                            v.push(s[i + 1]);
                            i += 2;
                        }
                        Some(&c) => {
                            v.push(c);
                            i += 1;
                        }
                    }
                }
                v
            } else {
                token(&mut i)
            };
            challenge.params.push((name.to_ascii_lowercase(), value));
            skip(&mut i, " \t");
            if i < s.len() && s[i] == ',' {
                i += 1;
            }
        }
        out.push(challenge);
        if i >= s.len() {
            return;
        }
    }
}

/// The digest algorithms Coffer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Md5,
    Sha256,
}

impl Algorithm {
    fn hash(self, data: &str) -> String {
        match self {
            Algorithm::Md5 => hex::encode(md5::Md5::digest(data.as_bytes())),
            Algorithm::Sha256 => hex::encode(<sha2::Sha256 as sha2::Digest>::digest(data)),
        }
    }
}

/// A Digest challenge Coffer can answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DigestChallenge {
    pub realm: String,
    pub nonce: String,
    pub opaque: Option<String>,
    pub algorithm: Algorithm,
    /// The `-sess` form.
    pub session: bool,
    /// `algorithm` as the server wrote it, echoed back.
    pub algorithm_name: Option<String>,
    /// `qop=auth` offered (else the RFC 2069 form).
    pub qop_auth: bool,
    pub stale: bool,
}

impl DigestChallenge {
    pub fn from_challenge(c: &Challenge) -> Option<DigestChallenge> {
        if c.scheme != "digest" {
            return None;
        }
        let algorithm_name = c.param("algorithm").map(str::to_owned);
        let (algorithm, session) = match algorithm_name
            .as_deref()
            .unwrap_or("MD5")
            .to_ascii_uppercase()
            .as_str()
        {
            "MD5" => (Algorithm::Md5, false),
            "MD5-SESS" => (Algorithm::Md5, true),
            "SHA-256" => (Algorithm::Sha256, false),
            "SHA-256-SESS" => (Algorithm::Sha256, true),
            _ => return None,
        };
        let qop = c.param("qop");
        let qop_auth = qop.is_some_and(|q| q.split(',').any(|v| v.trim() == "auth"));
        if qop.is_some() && !qop_auth {
            // Only auth-int offered: that needs the whole body hashed first.
            return None;
        }
        Some(DigestChallenge {
            realm: c.param("realm")?.to_owned(),
            nonce: c.param("nonce")?.to_owned(),
            opaque: c.param("opaque").map(str::to_owned),
            algorithm,
            session,
            algorithm_name,
            qop_auth,
            stale: c
                .param("stale")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        })
    }

    /// The `Authorization` value for `method` on `uri` (the request target as sent), with the
    /// nonce count `nc` and the client nonce `cnonce`.
    pub fn answer(
        &self,
        login: &str,
        password: &str,
        method: &str,
        uri: &str,
        nc: u32,
        cnonce: &str,
    ) -> String {
        let h = |s: &str| self.algorithm.hash(s);
        let mut ha1 = h(&format!("{login}:{}:{password}", self.realm));
        if self.session {
            ha1 = h(&format!("{ha1}:{}:{cnonce}", self.nonce));
        }
        let ha2 = h(&format!("{method}:{uri}"));
        let nc = format!("{nc:08x}");
        let response = if self.qop_auth {
            h(&format!("{ha1}:{}:{nc}:{cnonce}:auth:{ha2}", self.nonce))
        } else {
            h(&format!("{ha1}:{}:{ha2}", self.nonce))
        };
        let mut out = format!(
            "Digest username=\"{}\", realm=\"{}\", nonce=\"{}\", uri=\"{}\", response=\"{response}\"",
            quote(login),
            quote(&self.realm),
            quote(&self.nonce),
            quote(uri),
        );
        if let Some(a) = &self.algorithm_name {
            out.push_str(&format!(", algorithm={a}"));
        }
        if self.qop_auth {
            out.push_str(&format!(
                ", qop=auth, nc={nc}, cnonce=\"{}\"",
                quote(cnonce)
            ));
        }
        if let Some(o) = &self.opaque {
            out.push_str(&format!(", opaque=\"{}\"", quote(o)));
        }
        out
    }
}

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The `Authorization` value of Basic.
pub(crate) fn basic(login: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{login}:{password}"))
    )
}

/// What to answer among `challenges`: the strongest Digest, else Basic; `None` when neither.
pub(crate) fn choose(challenges: &[Challenge]) -> Option<Scheme> {
    let digests = challenges
        .iter()
        .filter_map(DigestChallenge::from_challenge);
    if let Some(d) = digests.max_by_key(|d| d.algorithm == Algorithm::Sha256) {
        return Some(Scheme::Digest(d));
    }
    challenges
        .iter()
        .any(|c| c.scheme == "basic")
        .then_some(Scheme::Basic)
}

/// The scheme a connector answers with, once the server has said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scheme {
    Basic,
    Digest(DigestChallenge),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_several_challenges_in_one_and_several_headers() {
        let got = parse_challenges([
            r#"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS", Basic realm="x""#,
            r#"Basic realm="a \"quoted\" realm", charset=UTF-8"#,
        ]);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].scheme, "digest");
        assert_eq!(got[0].param("qop"), Some("auth, auth-int"));
        assert_eq!(got[0].param("algorithm"), Some("SHA-256"));
        assert_eq!(got[1].scheme, "basic");
        assert_eq!(got[1].param("realm"), Some("x"));
        assert_eq!(got[2].param("realm"), Some("a \"quoted\" realm"));
        assert_eq!(got[2].param("charset"), Some("UTF-8"));
        assert!(parse_challenges(["", "  ,  "]).is_empty());
        // Broken input keeps what parsed and never panics.
        let got = parse_challenges([r#"Basic realm="unterminated"#, "=x", "Digest a=\"\\"]);
        assert_eq!(got[0].param("realm"), Some("unterminated"));
    }

    /// RFC 7616 §3.9.1: the same request answered with SHA-256 and with MD5.
    #[test]
    fn rfc7616_examples() {
        let challenge = |alg: &str| {
            parse_challenges([format!(
                r#"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm={alg}, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
            )
            .as_str()])
        };
        let cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ";
        for (alg, want) in [
            (
                "SHA-256",
                "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
            ),
            ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
        ] {
            let c = challenge(alg);
            let Some(Scheme::Digest(d)) = choose(&c) else {
                panic!("{alg}: no digest chosen")
            };
            let header = d.answer(
                "Mufasa",
                "Circle of Life",
                "GET",
                "/dir/index.html",
                1,
                cnonce,
            );
            assert!(
                header.contains(&format!("response=\"{want}\"")),
                "{alg}: {header}"
            );
            assert!(header.contains("qop=auth, nc=00000001"), "{header}");
            assert!(header.contains("opaque=\"FQhe/"), "{header}");
        }
    }

    /// RFC 2617 §3.5 (qop=auth, MD5), and the RFC 2069 form without qop.
    #[test]
    fn rfc2617_example_and_the_form_without_qop() {
        let c = parse_challenges([
            r#"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#,
        ]);
        let d = DigestChallenge::from_challenge(&c[0]).unwrap();
        let header = d.answer(
            "Mufasa",
            "Circle Of Life",
            "GET",
            "/dir/index.html",
            1,
            "0a4f113b",
        );
        assert!(
            header.contains("response=\"6629fae49393a05397450978507c4ef1\""),
            "{header}"
        );
        let legacy = DigestChallenge {
            qop_auth: false,
            ..d
        };
        let header = legacy.answer("Mufasa", "Circle Of Life", "GET", "/dir/index.html", 1, "x");
        assert!(!header.contains("qop="), "{header}");
        assert!(!header.contains("cnonce"), "{header}");
    }

    #[test]
    fn choose_prefers_sha256_digest_then_md5_then_basic() {
        let c = parse_challenges([
            r#"Basic realm="r""#,
            r#"Digest realm="r", nonce="n", algorithm=MD5, qop="auth""#,
            r#"Digest realm="r", nonce="n", algorithm=SHA-256, qop="auth""#,
        ]);
        let Some(Scheme::Digest(d)) = choose(&c) else {
            panic!()
        };
        assert_eq!(d.algorithm, Algorithm::Sha256);
        assert_eq!(choose(&c[..1]), Some(Scheme::Basic));
        // Unknown algorithms and auth-int only are not answered.
        let c = parse_challenges([
            r#"Digest realm="r", nonce="n", algorithm=SHA-512-256"#,
            r#"Digest realm="r", nonce="n", qop="auth-int""#,
            r#"Negotiate"#,
        ]);
        assert_eq!(choose(&c), None);
    }

    #[test]
    fn basic_and_stale() {
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        let c = parse_challenges([r#"Digest realm="r", nonce="n2", stale=TRUE"#]);
        assert!(DigestChallenge::from_challenge(&c[0]).unwrap().stale);
    }
}
