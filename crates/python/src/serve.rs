//! `smdebug_rs.serve(paths, …)`: the live web view (`smdebug serve`) started from Python, so
//! that a notebook can open it; it runs on threads of its own until `.stop()`.

use crate::errors::ExceptionClass;
use crate::{run, NativeError, NativeResult};
use pyo3::prelude::*;
use smdebug_serve::{ServeError, ServeOptions};
use std::sync::Mutex;

/// A running server: `url` to open, `stop()` to end it (also on leaving a `with` block).
#[pyclass(module = "smdebug_rs._native", name = "Server")]
pub struct Server {
    url: String,
    token: Option<String>,
    inner: Mutex<Option<smdebug_serve::Server>>,
}

#[pymethods]
impl Server {
    /// The URL to open (with `?token=` when a token is required).
    #[getter]
    fn url(&self) -> String {
        self.url.clone()
    }

    /// The token requests must carry, if any.
    #[getter]
    fn token(&self) -> Option<String> {
        self.token.clone()
    }

    /// Whether it still serves.
    #[getter]
    fn running(&self) -> bool {
        self.inner.lock().is_ok_and(|s| s.is_some())
    }

    /// Stops serving and waits for the server's threads (a second call does nothing).
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let server = self.inner.lock().ok().and_then(|mut s| s.take());
        run(py, move || -> NativeResult<()> {
            if let Some(s) = server {
                s.stop();
            }
            Ok(())
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.stop(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<smdebug_rs Server {}>", self.url)
    }
}

/// Serves the trials under `paths` (trials, folders of trials, object-store prefixes) on
/// `host:port` (port 0: a free one) and returns the running [`Server`]. `rules=[]` shows no
/// rule verdicts; `None` runs the report's default rules.
#[pyfunction]
#[pyo3(signature = (paths, host="127.0.0.1".to_owned(), port=smdebug_serve::DEFAULT_PORT, token=None, rules=None))]
fn serve(
    py: Python<'_>,
    paths: Vec<String>,
    host: String,
    port: u16,
    token: Option<String>,
    rules: Option<Vec<String>>,
) -> PyResult<Server> {
    let server = run(py, move || -> NativeResult<smdebug_serve::Server> {
        let mut options = ServeOptions::new(paths);
        options.host = host;
        options.port = port;
        options.token = token;
        if let Some(rules) = rules {
            options.rules = rules
                .iter()
                .map(|r| smdebug_fleet::RuleSpec::new(r))
                .collect();
        }
        smdebug_serve::Server::start(options).map_err(|e| match e {
            ServeError::InvalidOptions(m) => NativeError::value(m),
            other => NativeError::Other(ExceptionClass::OSError, other.to_string()),
        })
    })?;
    Ok(Server {
        url: server.url().to_owned(),
        token: server.token().map(str::to_owned),
        inner: Mutex::new(Some(server)),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Server>()?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    Ok(())
}
