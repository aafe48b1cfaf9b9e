//! Who may ask: the token of a server bound off loopback, checked on every request, and the
//! `Host` check that keeps a loopback server from being read through a rebound DNS name.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The header a client may send the token in (besides `Authorization: Bearer …` and the
/// `token` query parameter, which the page's event stream needs).
pub const TOKEN_HEADER: &str = "x-smdebug-token";

/// A fresh token: 32 hex digits from the system's random source.
pub fn generate_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// Whether `token` can be carried in a URL and a header as it is.
pub(crate) fn usable_token(token: &str) -> bool {
    token.len() >= 8
        && token.len() <= 256
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// What the access check knows.
#[derive(Debug)]
pub(crate) struct Access {
    /// The token every request must carry, if any.
    pub token: Option<String>,
    /// Bound to a loopback address: requests must name a loopback host.
    pub loopback: bool,
}

/// Compares without an early exit, so the time taken says nothing about the token.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The token a request carries: header, bearer or `?token=`.
pub(crate) fn request_token<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<String> {
    if let Some(v) = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(v.to_owned());
    }
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(v.trim().to_owned());
    }
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v.to_owned())
}

/// Whether a `Host` header names this machine's loopback interface.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The middleware: refuses a request without the token (401) or, on loopback, one naming
/// another host (403); adds the headers that keep the pages to themselves.
pub(crate) async fn check(
    State(access): State<Arc<Access>>,
    request: Request,
    next: Next,
) -> Response {
    if access.loopback {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !loopback_host(host) {
            return (
                StatusCode::FORBIDDEN,
                "this server answers to localhost only\n",
            )
                .into_response();
        }
    }
    if let Some(expected) = &access.token {
        let given = request_token(request.headers(), request.uri().query());
        if !given.is_some_and(|g| same(&g, expected)) {
            return (
                StatusCode::UNAUTHORIZED,
                "a token is required: open the URL the server printed (…?token=…)\n",
            )
                .into_response();
        }
    }
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_tokens() {
        for h in [
            "localhost:6007",
            "127.0.0.1:1",
            "[::1]:6007",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert!(loopback_host(h), "{h}");
        }
        for h in [
            "evil.example:6007",
            "10.0.0.1:6007",
            "",
            "[::2]:1",
            "localhost.evil:1",
        ] {
            assert!(!loopback_host(h), "{h}");
        }
        let t = generate_token().unwrap();
        assert_eq!(t.len(), 32);
        assert!(usable_token(&t));
        assert!(!usable_token("short"));
        assert!(!usable_token("has space in it"));
        assert!(same(&t, &t.clone()) && !same(&t, "x"));
        let mut headers = HeaderMap::new();
        assert_eq!(
            request_token(&headers, Some("a=1&token=abc")).as_deref(),
            Some("abc")
        );
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer xyz"),
        );
        assert_eq!(request_token(&headers, None).as_deref(), Some("xyz"));
    }
}
