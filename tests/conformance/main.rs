//! The cross-implementation suite: every module compares smdebug-rs with the real Python
//! smdebug 1.0.34 (run by `cargo xtask test`, which sets up the peer).
mod config;
mod demo;
mod export;
mod hook;
mod index;
mod record;
mod reduce;
mod rules;
mod scale;
mod storage;
mod trial;
mod xgboost;
