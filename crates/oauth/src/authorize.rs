//! The authorization endpoint (`GET /oauth/authorize`, interface §5.2): validating the request,
//! the redirect-URI rule, and the redirects that answer it (code or error).
//!
//! Two kinds of failure exist: while the client or its redirect URI is in doubt the user agent
//! must not be sent anywhere (an error page), afterwards errors go back to the client by
//! redirect, as RFC 6749 §4.1.2.1 requires.

use crate::{pkce, scope, ClientInfo};
use coffer_domain::client::{flag, flow};
use coffer_domain::Scope;
use coffer_errors::{OAuthError, OAuthErrorCode};
use url::form_urlencoded;

/// The query of an authorization request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizeParams {
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub response_type: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    /// `m=1`: show the mobile login page.
    pub mobile: bool,
}

/// A request that may proceed to login and consent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidAuthorize {
    pub client_id: String,
    /// The redirect URI to answer to (and to store with the code).
    pub redirect_uri: String,
    pub scope: Scope,
    pub state: Option<String>,
    /// An S256 challenge, when the client uses PKCE.
    pub code_challenge: Option<String>,
    pub needs_consent: bool,
    pub mobile: bool,
}

/// Why an authorization request is refused, and how to tell the user agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Unknown client or a bad redirect URI: show an error page, NEVER redirect.
    ErrorPage { message: String },
    /// Any other error: redirect to the redirect URI with `error`, `error_description`, `state`.
    Redirect { location: String },
}

/// Whether `candidate` may be used as redirect URI of a client that registered `registered`.
///
/// The candidate must start with the registered URI at a boundary: equal, or the registered
/// value ends with `/`, or the next character is `/`, `?` or `#`. Registered
/// `https://app.example.com` thus refuses `https://app.example.com.evil.net/` and
/// `https://app.example.com@evil.net`. Candidates with userinfo, a fragment, control
/// characters, whitespace, backslashes or `..` path segments are refused whatever the prefix.
pub fn redirect_uri_allowed(registered: &str, candidate: &str) -> bool {
    if registered.is_empty() || !candidate_is_clean(candidate) {
        return false;
    }
    let Some(rest) = candidate.strip_prefix(registered) else {
        return false;
    };
    rest.is_empty() || registered.ends_with('/') || rest.starts_with(['/', '?', '#'])
}

/// The checks on the candidate alone.
fn candidate_is_clean(candidate: &str) -> bool {
    // Browsers read `\` as `/` in http(s) URLs, so it could move the authority; `#` starts a
    // fragment, which RFC 6749 §3.1.2 forbids in redirect URIs.
    if candidate
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\' || c == '#')
    {
        return false;
    }
    let after_scheme = match candidate.split_once(':') {
        Some((_, rest)) => rest,
        None => candidate,
    };
    let (authority, path) = match after_scheme.strip_prefix("//") {
        Some(rest) => rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len())),
        None => ("", after_scheme),
    };
    // Userinfo would let `https://app.example.com@evil.net` reach evil.net.
    if authority.contains('@') {
        return false;
    }
    let path = &path[..path.find('?').unwrap_or(path.len())];
    // Decoded once, as the target server would, so `%2e%2e` and `..%2f` count as `..`.
    let decoded = percent_decode(path);
    !decoded.split(['/', '\\']).any(|segment| segment == "..")
}

/// Percent-decodes once; malformed escapes stay as they are.
fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Appends form-urlencoded query parameters to `uri`, keeping an existing query and placing
/// them before a fragment, if any.
pub fn append_query(uri: &str, params: &[(&str, &str)]) -> String {
    let (base, fragment) = match uri.find('#') {
        Some(i) => uri.split_at(i),
        None => (uri, ""),
    };
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    if query.is_empty() {
        return uri.to_owned();
    }
    let separator = match base.find('?') {
        None => "?",
        Some(_) if base.ends_with('?') || base.ends_with('&') => "",
        Some(_) => "&",
    };
    format!("{base}{separator}{query}{fragment}")
}

/// Validates an authorization request for `client` (`None` when `client_id` is unknown or
/// missing).
///
/// The order matters: an unknown client or a bad redirect URI is shown on an error page;
/// every later failure redirects to the (now trusted) redirect URI with the `state`.
pub fn check(
    params: &AuthorizeParams,
    client: Option<&ClientInfo>,
) -> Result<ValidAuthorize, Rejection> {
    let Some(client) = client else {
        return Err(error_page("The client is unknown."));
    };
    if params.client_id.as_deref() != Some(client.id.as_str()) {
        return Err(error_page("The client is unknown."));
    }
    let redirect_uri = match non_empty(&params.redirect_uri) {
        Some(uri) if redirect_uri_allowed(&client.redirect_uri, uri) => uri.to_owned(),
        Some(_) => {
            return Err(error_page(
                "The redirect URI is not registered for the client.",
            ))
        }
        None if client.redirect_uri.is_empty() => {
            return Err(error_page("The client has no registered redirect URI."))
        }
        None => client.redirect_uri.clone(),
    };
    let state = non_empty(&params.state).map(str::to_owned);
    let redirect = |err: OAuthError| Rejection::Redirect {
        location: error_location(&redirect_uri, &err, state.as_deref()),
    };

    match non_empty(&params.response_type) {
        None => {
            return Err(redirect(OAuthError::invalid_request(
                "response_type is required.",
            )))
        }
        Some("code") => {}
        Some(_) => {
            return Err(redirect(OAuthError::new(
                OAuthErrorCode::UnsupportedResponseType,
                "Only response_type=code is supported.",
            )))
        }
    }
    if client.has_flag(flag::DISABLED) {
        return Err(redirect(OAuthError::unauthorized_client(
            "The client is disabled.",
        )));
    }
    if !client.has_flow(flow::AUTH_CODE) {
        return Err(redirect(OAuthError::unauthorized_client(
            "The client may not use the authorization code grant.",
        )));
    }
    let scope =
        scope::resolve_requested(params.scope.as_deref(), &client.scope).map_err(redirect)?;
    let code_challenge = check_pkce(params).map_err(redirect)?;

    Ok(ValidAuthorize {
        client_id: client.id.clone(),
        redirect_uri,
        scope,
        state,
        code_challenge,
        needs_consent: !client.has_flag(flag::NO_CONSENT),
        mobile: params.mobile,
    })
}

/// The PKCE part of the request: the S256 challenge, if any.
fn check_pkce(params: &AuthorizeParams) -> Result<Option<String>, OAuthError> {
    let method = non_empty(&params.code_challenge_method);
    let Some(challenge) = non_empty(&params.code_challenge) else {
        return match method {
            Some(_) => Err(OAuthError::invalid_request(
                "code_challenge_method was given without code_challenge.",
            )),
            None => Ok(None),
        };
    };
    match method {
        // RFC 7636 defaults a missing method to `plain`, which Coffer refuses: `plain` gives
        // no protection once the authorization request is observed.
        None | Some("plain") => {
            return Err(OAuthError::invalid_request(
                "code_challenge_method must be S256; plain is not accepted.",
            ))
        }
        Some(pkce::METHOD_S256) => {}
        Some(_) => {
            return Err(OAuthError::invalid_request(
                "code_challenge_method must be S256.",
            ))
        }
    }
    if !pkce::valid_challenge(challenge) {
        return Err(OAuthError::invalid_request(
            "code_challenge must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.",
        ));
    }
    Ok(Some(challenge.to_owned()))
}

/// The redirect of a successful authorization: `code` and `state`.
pub fn success_location(redirect_uri: &str, code: &str, state: Option<&str>) -> String {
    let mut params = vec![("code", code)];
    params.extend(state.filter(|s| !s.is_empty()).map(|s| ("state", s)));
    append_query(redirect_uri, &params)
}

/// The redirect of an error after validation (e.g. `access_denied` when the user denies).
pub fn error_location(redirect_uri: &str, err: &OAuthError, state: Option<&str>) -> String {
    let mut params = vec![
        ("error", err.error.as_str()),
        ("error_description", err.error_description.as_ref()),
    ];
    params.extend(state.filter(|s| !s.is_empty()).map(|s| ("state", s)));
    append_query(redirect_uri, &params)
}

fn error_page(message: &str) -> Rejection {
    Rejection::ErrorPage {
        message: message.to_owned(),
    }
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkce::challenge_s256;
    use crate::testutil::{client, client_without_flow, CLIENT_ID, REDIRECT};

    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

    fn params() -> AuthorizeParams {
        AuthorizeParams {
            client_id: Some(CLIENT_ID.into()),
            redirect_uri: Some(REDIRECT.into()),
            response_type: Some("code".into()),
            scope: Some("files/*".into()),
            state: Some("xyz".into()),
            code_challenge: None,
            code_challenge_method: None,
            mobile: false,
        }
    }

    /// The `error` and `state` of a redirect rejection.
    fn redirect_error(r: Result<ValidAuthorize, Rejection>) -> (String, Option<String>, String) {
        match r {
            Err(Rejection::Redirect { location }) => {
                let (base, query) = location.split_once('?').expect("query");
                let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
                    .into_owned()
                    .collect();
                let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                assert!(get("error_description").is_some(), "{location}");
                (get("error").expect("error"), get("state"), base.to_owned())
            }
            other => panic!("expected a redirect, got {other:?}"),
        }
    }

    #[test]
    fn redirect_uri_rule() {
        let reg = "https://app.example.com";
        let cases = [
            (reg, "https://app.example.com", true),
            (reg, "https://app.example.com/", true),
            (reg, "https://app.example.com/cb", true),
            (reg, "https://app.example.com?x=1", true),
            (reg, "https://app.example.com/cb?x=1&y=a..b", true),
            (reg, "https://app.example.com.evil.net/", false),
            (reg, "https://app.example.com.evil.net", false),
            (reg, "https://app.example.com@evil.net", false),
            (reg, "https://app.example.com@evil.net/cb", false),
            (reg, "https://app.example.com:8443/", false),
            (reg, "https://app.example.comx", false),
            (reg, "https://app.example.com\\@evil.net", false),
            (reg, "https://app.example.com/cb#frag", false),
            (reg, "https://app.example.com#frag", false),
            (reg, "https://app.example.com/a b", false),
            (reg, "https://app.example.com/a\tb", false),
            (reg, "https://app.example.com/a\nb", false),
            (reg, "https://app.example.com/\u{0}", false),
            (reg, "https://app.example.com/../x", false),
            (reg, "https://app.example.com/a/..", false),
            (reg, "https://app.example.com/%2e%2e/x", false),
            (reg, "https://app.example.com/%2E./x", false),
            (reg, "https://app.example.com/..%2fx", false),
            (reg, "https://app.example.com/a..b/x", true),
            (reg, "http://app.example.com", false),
            (reg, "HTTPS://app.example.com", false),
            (reg, "", false),
            (
                "https://app.example.com/cb",
                "https://app.example.com/cb",
                true,
            ),
            (
                "https://app.example.com/cb",
                "https://app.example.com/cb/x",
                true,
            ),
            (
                "https://app.example.com/cb",
                "https://app.example.com/cb?a=b",
                true,
            ),
            (
                "https://app.example.com/cb",
                "https://app.example.com/cbx",
                false,
            ),
            (
                "https://app.example.com/cb",
                "https://app.example.com/c",
                false,
            ),
            (
                "https://app.example.com/cb",
                "https://app.example.com/cb/../admin",
                false,
            ),
            (
                "https://app.example.com/",
                "https://app.example.com/anything",
                true,
            ),
            (
                "https://app.example.com/",
                "https://app.example.com/a/../b",
                false,
            ),
            ("com.example.app:/oauth", "com.example.app:/oauth", true),
            ("com.example.app:/oauth", "com.example.app:/oauth/x", true),
            ("com.example.app:/oauth", "com.example.app:/oauthx", false),
            ("myapp://cb", "myapp://cb?x", true),
            ("myapp://cb", "myapp://cb@evil", false),
            ("", "https://app.example.com", false),
        ];
        for (registered, candidate, ok) in cases {
            assert_eq!(
                redirect_uri_allowed(registered, candidate),
                ok,
                "{registered} <- {candidate}"
            );
        }
    }

    #[test]
    fn append_query_cases() {
        let p: &[(&str, &str)] = &[("code", "a b&c"), ("state", "x/y=")];
        let cases = [
            (
                "https://a.io/cb",
                "https://a.io/cb?code=a+b%26c&state=x%2Fy%3D",
            ),
            (
                "https://a.io/cb?k=v",
                "https://a.io/cb?k=v&code=a+b%26c&state=x%2Fy%3D",
            ),
            (
                "https://a.io/cb?",
                "https://a.io/cb?code=a+b%26c&state=x%2Fy%3D",
            ),
            (
                "https://a.io/cb?k=v&",
                "https://a.io/cb?k=v&code=a+b%26c&state=x%2Fy%3D",
            ),
            (
                "https://a.io/cb#f",
                "https://a.io/cb?code=a+b%26c&state=x%2Fy%3D#f",
            ),
            (
                "https://a.io/cb?k#f",
                "https://a.io/cb?k&code=a+b%26c&state=x%2Fy%3D#f",
            ),
        ];
        for (uri, expect) in cases {
            assert_eq!(append_query(uri, p), expect, "{uri}");
        }
        assert_eq!(append_query("https://a.io/cb?k", &[]), "https://a.io/cb?k");
    }

    #[test]
    fn valid_request() {
        let v = check(&params(), Some(&client())).unwrap();
        assert_eq!(
            v,
            ValidAuthorize {
                client_id: CLIENT_ID.into(),
                redirect_uri: REDIRECT.into(),
                scope: Scope::parse("files/*").unwrap(),
                state: Some("xyz".into()),
                code_challenge: None,
                needs_consent: true,
                mobile: false,
            }
        );
    }

    #[test]
    fn defaults_consent_and_mobile() {
        let mut p = params();
        p.redirect_uri = None;
        p.scope = None;
        p.state = Some(String::new());
        p.mobile = true;
        let mut c = client();
        c.flag = flag::NO_CONSENT;
        let v = check(&p, Some(&c)).unwrap();
        assert_eq!(v.redirect_uri, REDIRECT);
        assert_eq!(v.scope, c.scope);
        assert_eq!(v.state, None);
        assert!(!v.needs_consent);
        assert!(v.mobile);
        // An empty redirect_uri is the same as none.
        p.redirect_uri = Some(String::new());
        assert_eq!(check(&p, Some(&c)).unwrap().redirect_uri, REDIRECT);
        // A longer URI below the registered one is kept as given.
        p.redirect_uri = Some(format!("{REDIRECT}/deeper?x=1"));
        assert_eq!(
            check(&p, Some(&c)).unwrap().redirect_uri,
            format!("{REDIRECT}/deeper?x=1")
        );
    }

    #[test]
    fn unknown_client_or_bad_redirect_is_an_error_page() {
        let page = |r: Result<ValidAuthorize, Rejection>| {
            assert!(matches!(r, Err(Rejection::ErrorPage { .. })), "{r:?}");
        };
        page(check(&params(), None));
        let mut p = params();
        p.client_id = None;
        page(check(&p, Some(&client())));
        p.client_id = Some("other".into());
        page(check(&p, Some(&client())));
        for bad in [
            "https://evil.net/cb",
            "https://app.example.com.evil.net/cb",
            "https://app.example.com/cb#x",
        ] {
            let mut p = params();
            p.redirect_uri = Some(bad.into());
            page(check(&p, Some(&client())));
        }
        // A bad redirect wins over every later error: nothing may be sent to it.
        let mut p = params();
        p.redirect_uri = Some("https://evil.net/".into());
        p.response_type = None;
        page(check(&p, Some(&client())));
        let mut c = client();
        c.redirect_uri = String::new();
        let mut p = params();
        p.redirect_uri = None;
        page(check(&p, Some(&c)));
        p.redirect_uri = Some(REDIRECT.into());
        page(check(&p, Some(&c)));
    }

    #[test]
    fn later_errors_redirect_with_state() {
        type Edit = fn(&mut AuthorizeParams, &mut ClientInfo);
        let cases: Vec<(&str, Edit)> = vec![
            ("invalid_request", |p, _| p.response_type = None),
            ("invalid_request", |p, _| {
                p.response_type = Some(String::new())
            }),
            ("unsupported_response_type", |p, _| {
                p.response_type = Some("token".into())
            }),
            ("unsupported_response_type", |p, _| {
                p.response_type = Some("CODE".into())
            }),
            ("unauthorized_client", |_, c| c.flag = flag::DISABLED),
            ("unauthorized_client", |_, c| {
                *c = client_without_flow(flow::AUTH_CODE)
            }),
            ("invalid_scope", |p, _| p.scope = Some("admin/*".into())),
            ("invalid_scope", |p, _| p.scope = Some("not a scope".into())),
            ("invalid_request", |p, _| {
                p.code_challenge_method = Some("S256".into())
            }),
            ("invalid_request", |p, _| {
                p.code_challenge = Some(challenge_s256(VERIFIER))
            }),
            ("invalid_request", |p, _| {
                p.code_challenge = Some(challenge_s256(VERIFIER));
                p.code_challenge_method = Some("plain".into());
            }),
            ("invalid_request", |p, _| {
                p.code_challenge = Some(challenge_s256(VERIFIER));
                p.code_challenge_method = Some("s256".into());
            }),
            ("invalid_request", |p, _| {
                p.code_challenge = Some("short".into());
                p.code_challenge_method = Some("S256".into());
            }),
            ("invalid_request", |p, _| {
                p.code_challenge = Some(format!("{}+", "a".repeat(43)));
                p.code_challenge_method = Some("S256".into());
            }),
        ];
        for (expect, edit) in cases {
            let (mut p, mut c) = (params(), client());
            edit(&mut p, &mut c);
            let (error, state, base) = redirect_error(check(&p, Some(&c)));
            assert_eq!(error, expect, "{p:?} {c:?}");
            assert_eq!(state.as_deref(), Some("xyz"));
            assert_eq!(base, REDIRECT);
        }
        // Without state, none is sent back.
        let mut p = params();
        p.state = None;
        p.response_type = None;
        assert_eq!(redirect_error(check(&p, Some(&client()))).1, None);
        // The order of the checks: response_type before client flags before scope before PKCE.
        let mut p = params();
        p.response_type = Some("token".into());
        p.scope = Some("admin/*".into());
        let mut c = client();
        c.flag = flag::DISABLED;
        assert_eq!(
            redirect_error(check(&p, Some(&c))).0,
            "unsupported_response_type"
        );
        p.response_type = Some("code".into());
        assert_eq!(redirect_error(check(&p, Some(&c))).0, "unauthorized_client");
        p.code_challenge_method = Some("plain".into());
        assert_eq!(
            redirect_error(check(&p, Some(&client()))).0,
            "invalid_scope"
        );
    }

    #[test]
    fn accepts_s256_challenge() {
        let mut p = params();
        p.code_challenge = Some(challenge_s256(VERIFIER));
        p.code_challenge_method = Some("S256".into());
        let v = check(&p, Some(&client())).unwrap();
        assert_eq!(v.code_challenge, Some(challenge_s256(VERIFIER)));
    }

    #[test]
    fn locations() {
        assert_eq!(
            success_location(REDIRECT, "c0de", Some("s t")),
            format!("{REDIRECT}?code=c0de&state=s+t")
        );
        assert_eq!(
            success_location(REDIRECT, "c0de", None),
            format!("{REDIRECT}?code=c0de")
        );
        assert_eq!(
            success_location(REDIRECT, "c0de", Some("")),
            format!("{REDIRECT}?code=c0de")
        );
        let denied = OAuthError::new(OAuthErrorCode::AccessDenied, "The user denied access.");
        assert_eq!(
            error_location("https://a.io/cb?k=v", &denied, Some("st")),
            "https://a.io/cb?k=v&error=access_denied&error_description=The+user+denied+access.&state=st"
        );
    }
}
