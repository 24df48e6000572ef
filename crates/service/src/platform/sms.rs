//! Sending text messages (two-factor codes, test messages). A trait, because there are two
//! senders: the recording sender (the default) keeps each message in the database, where an
//! operator or a test can read it; the gateway sender posts each message to an HTTP SMS gateway
//! (`COFFER_SMS_GATEWAY_URL`).

use crate::{now, Ctx, Result};

/// Sends one text message.
pub trait SmsSender: Send + Sync {
    fn send(&self, ctx: &Ctx, user_id: Option<&str>, to: &str, body: &str) -> Result<()>;
}

/// Keeps messages in the `sms_messages` table instead of sending them.
#[derive(Debug, Default, Clone, Copy)]
pub struct RecordingSender;

impl SmsSender for RecordingSender {
    fn send(&self, ctx: &Ctx, user_id: Option<&str>, to: &str, body: &str) -> Result<()> {
        ctx.write(|c| {
            Ok(coffer_store::users::record_sms(
                c,
                user_id,
                to,
                body,
                now(),
            )?)
        })
    }
}

/// Posts `{to, body}` as JSON to an SMS gateway; any 2xx is sent.
#[derive(Debug, Clone)]
pub struct GatewaySender {
    pub url: String,
}

impl SmsSender for GatewaySender {
    fn send(&self, _ctx: &Ctx, _user_id: Option<&str>, to: &str, body: &str) -> Result<()> {
        let agent = ureq::AgentBuilder::new()
            .timeout(std::time::Duration::from_secs(10))
            .redirects(0)
            .build();
        match agent
            .post(&self.url)
            .send_json(serde_json::json!({"to": to, "body": body}))
        {
            Ok(_) => Ok(()),
            Err(e) => {
                // The gateway's address and answer are for the operator's log only.
                log::warn!("SMS gateway {}: {e}", self.url);
                Err(
                    coffer_errors::ApiError::new(coffer_errors::ErrorCode::ServiceUnavailable)
                        .with_message("The text message could not be sent.")
                        .into(),
                )
            }
        }
    }
}

/// The sender the configuration names: the gateway when set, else the recording sender.
pub fn configured(ctx: &Ctx) -> Box<dyn SmsSender> {
    match &ctx.config.sms_gateway {
        Some(url) => Box::new(GatewaySender { url: url.clone() }),
        None => Box::new(RecordingSender),
    }
}

/// A phone number in international form: an optional `+`, then 6 to 15 digits; spaces, dots,
/// dashes and parentheses are dropped.
pub fn normalise_number(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    let (plus, rest) = match trimmed.strip_prefix('+') {
        Some(r) => ("+", r),
        None => ("", trimmed),
    };
    if !rest
        .chars()
        .all(|c| c.is_ascii_digit() || " .-()".contains(c))
    {
        return None;
    }
    let digits: String = rest.chars().filter(char::is_ascii_digit).collect();
    (6..=15)
        .contains(&digits.len())
        .then(|| format!("{plus}{digits}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(
            normalise_number("+41 (79) 123-45.67").as_deref(),
            Some("+41791234567")
        );
        assert_eq!(
            normalise_number("0791234567").as_deref(),
            Some("0791234567")
        );
        for bad in [
            "",
            "12345",
            "+1234567890123456",
            "call me",
            "+41 79 abc",
            "++41791234567",
        ] {
            assert_eq!(normalise_number(bad), None, "{bad}");
        }
    }
}
