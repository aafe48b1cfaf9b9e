//! The cross-implementation suite: every module compares smdebug-rs with the real Python
//! smdebug 1.0.34 (run by `cargo xtask test`, which sets up the peer).
mod browser;
mod config;
mod demo;
mod doctor;
mod export;
mod fleet;
mod fork;
mod health;
mod hook;
mod index;
mod record;
mod recorder;
mod reduce;
mod rules;
mod scale;
mod seal;
mod serve;
mod storage;
mod stores;
mod trial;
mod xgboost;
