//! `smdebug`: the command-line tool of smdebug-rs.
fn main() {
    println!("smdebug {}", env!("CARGO_PKG_VERSION"));
}
