//! Blocking stores in a forked child: the child starts its own runtime, and an async store
//! opened before the fork is an error there, not a hang. Its own test binary, so no other
//! test's thread is in the middle of something when the process forks.

#![cfg(unix)]

use std::time::{Duration, Instant};

use smdebug_storage::{BlockingStore, Location, StorageError};

fn open(url: &str) -> BlockingStore {
    BlockingStore::open(&Location::parse(url).unwrap()).unwrap()
}

/// What the child checks; a panic is its failure.
fn in_child(inherited: &BlockingStore, local_dir: &str) {
    let err = inherited.get("k").unwrap_err();
    assert!(
        matches!(&err, StorageError::Runtime { reason } if reason.contains("fork")),
        "{err}"
    );
    // A store opened in the child works: the child starts a runtime of its own (the
    // child begins with the forking thread only).
    #[cfg(target_os = "linux")]
    let threads = || std::fs::read_dir("/proc/self/task").unwrap().count();
    #[cfg(target_os = "linux")]
    assert_eq!(threads(), 1);
    let fresh = open("memory://fork-child");
    #[cfg(target_os = "linux")]
    assert_eq!(threads(), 3, "the child's runtime has two workers");
    fresh.put("c", "child".into()).unwrap();
    assert_eq!(fresh.get("c").unwrap(), "child");
    // Local stores work in both processes, also driven asynchronously.
    let local = open(local_dir);
    assert_eq!(local.get("l").unwrap(), "local");
    assert_eq!(
        local.block_on(local.storage().get("l")).unwrap().unwrap(),
        "local"
    );
}

#[test]
fn a_forked_child_starts_its_own_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let local_dir = dir.path().to_str().unwrap().to_owned();
    open(&local_dir).put("l", "local".into()).unwrap();
    let inherited = open("memory://fork-parent");
    inherited.put("k", "v".into()).unwrap();

    // SAFETY: the child only runs Rust code of this test and leaves with `_exit`; the
    // parent's other threads (the storage runtime's idle workers) hold no lock it takes.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_child(&inherited, &local_dir)
        }))
        .is_ok();
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }

    // A hang in the child is the failure this test guards against: wait with a deadline.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut status = 0;
    loop {
        // SAFETY: waits for the child just forked.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(done >= 0, "waitpid failed");
        if done == pid {
            break;
        }
        if Instant::now() > deadline {
            // SAFETY: the child is ours and not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child failed (status {status}; its panic message is above)"
    );
    // The parent's store and runtime are untouched.
    assert_eq!(inherited.get("k").unwrap(), "v");
}
