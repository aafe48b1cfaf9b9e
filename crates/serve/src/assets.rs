//! The pages' files, compiled into the binary: nothing is fetched from elsewhere (no CDN, no
//! font), and no request reads a file from disk.

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::Arc;

/// `(route, content type, bytes)` of every file served.
pub(crate) const FILES: &[(&str, &str, &str)] = &[
    (
        "/app.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    ),
    (
        "/app.css",
        "text/css; charset=utf-8",
        include_str!("../assets/app.css"),
    ),
    (
        "/vendor/uplot/uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/vendor/uplot/uPlot.iife.min.js"),
    ),
    (
        "/vendor/uplot/uPlot.min.css",
        "text/css; charset=utf-8",
        include_str!("../assets/vendor/uplot/uPlot.min.css"),
    ),
    (
        "/vendor/uplot/LICENSE",
        "text/plain; charset=utf-8",
        include_str!("../assets/vendor/uplot/LICENSE"),
    ),
];

const INDEX: &str = include_str!("../assets/index.html");

/// The page, its asset links carrying the token it was opened with (already checked), so
/// that the browser's requests for them pass the check too.
pub(crate) async fn index(
    State(shared): State<Arc<crate::Shared>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let suffix = match (&shared.token, q.get("token")) {
        (Some(_), Some(t)) if crate::auth::usable_token(t) => format!("?token={t}"),
        _ => String::new(),
    };
    let page = INDEX.replace("{{TOKEN_QUERY}}", &suffix);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

/// One embedded file.
pub(crate) fn file(route: &str) -> Response {
    match FILES.iter().find(|(r, _, _)| *r == route) {
        Some((_, kind, body)) => ([(header::CONTENT_TYPE, *kind)], *body).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
