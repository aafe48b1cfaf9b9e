//! The reductions' tests, one binary.

mod finite;
mod health;
mod props;
mod semantics;
