//! The scope a grant receives: what the client asked for, limited to what it may ask for.

use coffer_domain::Scope;
use coffer_errors::OAuthError;

/// A blank or missing request means the client's registered scope (interface §5.1); otherwise
/// the request must parse and be covered by the registered scope, else `invalid_scope`.
pub fn resolve_requested(requested: Option<&str>, registered: &Scope) -> Result<Scope, OAuthError> {
    let Some(requested) = requested.filter(|s| !s.trim().is_empty()) else {
        return Ok(registered.clone());
    };
    let scope = Scope::parse(requested).map_err(OAuthError::invalid_scope)?;
    if !registered.covers(&scope) {
        return Err(OAuthError::invalid_scope(
            "The requested scope exceeds the scope registered for the client.",
        ));
    }
    Ok(scope)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coffer_errors::OAuthErrorCode;

    #[test]
    fn resolves() {
        let registered = Scope::parse("folders/* files/* GET/users/*").unwrap();
        // (requested, Ok(canonical) or Err)
        let cases: [(Option<&str>, Option<&str>); 10] = [
            (None, Some("folders/* files/* GET/users/*")),
            (Some(""), Some("folders/* files/* GET/users/*")),
            (Some("  \t "), Some("folders/* files/* GET/users/*")),
            (Some("files/*"), Some("files/*")),
            (Some("GET/users/me files/*"), Some("GET/users/me files/*")),
            (Some("GET/folders/1"), Some("GET/folders/1")),
            (Some("users/*"), None),
            (Some("admin/*"), None),
            (Some("*"), None),
            (Some("GET/users"), None),
        ];
        for (requested, expect) in cases {
            let got = resolve_requested(requested, &registered);
            match expect {
                Some(s) => assert_eq!(got.unwrap().to_string(), s, "{requested:?}"),
                None => {
                    assert_eq!(
                        got.unwrap_err().error,
                        OAuthErrorCode::InvalidScope,
                        "{requested:?}"
                    )
                }
            }
        }
    }

    #[test]
    fn everything_covers_any_request() {
        let all = Scope::everything();
        assert_eq!(
            resolve_requested(Some("admin/* *"), &all)
                .unwrap()
                .to_string(),
            "admin/* *"
        );
        assert_eq!(resolve_requested(None, &all).unwrap(), all);
    }
}
