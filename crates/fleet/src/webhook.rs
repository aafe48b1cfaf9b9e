//! Firings sent where a team looks: each one posted as JSON that a Slack incoming webhook
//! accepts (`{"text": …}`), in the order of the firing log, retried until it is delivered.

use crate::record::FiringRecord;
use std::time::Duration;

/// Where and how firings are posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookOptions {
    /// The URL a firing is `POST`ed to (a Slack incoming webhook, or anything that takes
    /// the same JSON).
    pub url: String,
    /// Attempts per firing within one pass (at least one); a firing still not delivered
    /// is tried again next pass, so nothing is given up.
    pub attempts: u32,
    /// Pause before the second attempt, doubled after each (a `Retry-After` of the
    /// receiver wins, up to 30 s).
    pub backoff: Duration,
    /// How long one request may take.
    pub timeout: Duration,
}

impl WebhookOptions {
    /// Four attempts, half a second apart and doubling, ten seconds per request.
    pub fn new(url: &str) -> Self {
        WebhookOptions {
            url: url.to_owned(),
            attempts: 4,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Why a firing was not delivered (yet).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The client could not be built (a URL that does not parse, no TLS).
    #[error("webhook {url}: {message}")]
    Client {
        /// The URL.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// Every attempt failed; the last one said this.
    #[error("webhook {url}: {attempts} attempt(s) failed, the last: {last}")]
    Undelivered {
        /// The URL.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error or answer.
        last: String,
    },
}

/// The message of a firing: `{"text": "…"}`, the one field every Slack incoming webhook
/// accepts, with the firing's description ([`FiringRecord::describe`]).
///
/// ```
/// let f = smdebug_fleet::FiringRecord {
///     trial: "job-1".into(), rule: "VanishingGradient".into(), step: 5,
///     mode: Some("TRAIN".into()), mode_step: Some(5), tensor: Some("gradient/w".into()),
///     message: "mean(|g|) below 1e-7".into(), actions: vec![],
/// };
/// let body = smdebug_fleet::webhook_message(&f);
/// assert_eq!(
///     body["text"],
///     "smdebug: job-1: VanishingGradient fired at step 5 (TRAIN step 5) on gradient/w: mean(|g|) below 1e-7"
/// );
/// ```
pub fn webhook_message(firing: &FiringRecord) -> serde_json::Value {
    serde_json::json!({ "text": format!("smdebug: {}", firing.describe()) })
}

/// Posts firings to one URL.
#[derive(Debug)]
pub struct Webhook {
    options: WebhookOptions,
    client: reqwest::blocking::Client,
}

impl Webhook {
    /// A client for `options.url` (no request made yet).
    pub fn new(options: WebhookOptions) -> Result<Self, WebhookError> {
        let client_error = |message: String| WebhookError::Client {
            url: options.url.clone(),
            message,
        };
        reqwest::Url::parse(&options.url).map_err(|e| client_error(e.to_string()))?;
        smdebug_storage::install_tls_provider();
        let client = reqwest::blocking::Client::builder()
            .timeout(options.timeout)
            .build()
            .map_err(|e| client_error(e.to_string()))?;
        Ok(Webhook { options, client })
    }

    /// The URL posted to.
    pub fn url(&self) -> &str {
        &self.options.url
    }

    /// Posts one firing; `Ok` once the receiver answered 2xx. Anything else — no answer, a
    /// 5xx, a 429, even a 4xx (a receiver that refuses may be fixed while the firing
    /// waits) — is tried again, up to `attempts` times.
    pub fn post(&self, firing: &FiringRecord) -> Result<(), WebhookError> {
        let body = webhook_message(firing);
        let attempts = self.options.attempts.max(1);
        let mut pause = self.options.backoff;
        let mut last = String::new();
        for attempt in 1..=attempts {
            let retry_after = match self.client.post(&self.options.url).json(&body).send() {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => {
                    let status = r.status();
                    let after = r
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(|s| Duration::from_secs(s.min(30)));
                    let text = r.text().unwrap_or_default();
                    last = format!(
                        "HTTP {status}: {}",
                        text.chars().take(200).collect::<String>()
                    );
                    after
                }
                Err(e) => {
                    last = e.to_string();
                    None
                }
            };
            if attempt < attempts {
                std::thread::sleep(retry_after.unwrap_or(pause));
                pause *= 2;
            }
        }
        Err(WebhookError::Undelivered {
            url: self.options.url.clone(),
            attempts,
            last,
        })
    }
}
