//! Bounded retry of transient local filesystem errors.

use std::io;
use std::time::Duration;

/// How the local backend retries transient I/O errors.
///
/// Only errors that can go away by themselves are retried: interrupted or timed-out calls,
/// `EAGAIN`, busy resources and stale NFS handles. Missing files, permissions, full disks and
/// the like fail at once — retrying cannot fix them and would only delay the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRetry {
    /// Attempts after the first one.
    pub max_retries: u32,
    /// Pause before the first retry; doubled each time, capped at `max_backoff`.
    pub initial_backoff: Duration,
    /// Longest pause between two attempts.
    pub max_backoff: Duration,
}

impl Default for LocalRetry {
    fn default() -> Self {
        LocalRetry {
            max_retries: 3,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(200),
        }
    }
}

impl LocalRetry {
    /// No retries at all.
    pub fn none() -> Self {
        LocalRetry {
            max_retries: 0,
            ..LocalRetry::default()
        }
    }

    /// Runs the blocking `op` until it succeeds, fails permanently, or the retries are spent.
    pub(crate) fn run<T>(&self, mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
        let mut backoff = self.initial_backoff;
        let mut attempt = 0;
        loop {
            match op() {
                Err(e) if attempt < self.max_retries && is_transient(&e) => {
                    tracing::debug!(error = %e, attempt, "transient local I/O error, retrying");
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(self.max_backoff);
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

fn is_transient(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        Interrupted | WouldBlock | TimedOut | ResourceBusy | StaleNetworkFileHandle
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_transient_errors_a_bounded_number_of_times() {
        let retry = LocalRetry {
            max_retries: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(1),
        };
        let mut calls = 0;
        let r: io::Result<()> = retry.run(|| {
            calls += 1;
            Err(io::Error::from(io::ErrorKind::Interrupted))
        });
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::Interrupted);
        assert_eq!(calls, 3);

        let mut calls = 0;
        let r = retry.run(|| {
            calls += 1;
            if calls < 2 {
                Err(io::Error::from(io::ErrorKind::TimedOut))
            } else {
                Ok(7)
            }
        });
        assert_eq!(r.unwrap(), 7);
    }

    #[test]
    fn does_not_retry_permanent_errors() {
        let mut calls = 0;
        let r: io::Result<()> = LocalRetry::default().run(|| {
            calls += 1;
            Err(io::Error::from(io::ErrorKind::NotFound))
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
