//! What can go wrong starting or running the server.

use std::net::SocketAddr;

/// An error of the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The options are inconsistent (no path, a bad host, a token that is not usable).
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// The address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The system's error.
        source: std::io::Error,
    },
    /// Discovering the trials under the served paths failed at start.
    #[error(transparent)]
    Fleet(#[from] smdebug_fleet::FleetError),
    /// The server's runtime or threads could not be started.
    #[error("starting the server: {0}")]
    Start(std::io::Error),
}

/// `Result` with [`ServeError`].
pub type Result<T, E = ServeError> = std::result::Result<T, E>;
