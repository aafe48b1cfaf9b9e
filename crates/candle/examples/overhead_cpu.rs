//! CPU time per training step of the demo network, all threads of the process together,
//! per thread, with no hook, the hook at save interval 500, the same hook plus the flight
//! recorder (N = 10), and reductions every step (the cases of the `paired_steps` bench).
//! Unlike the wall time it hardly changes when other processes compete for the cores, so it
//! shows the hook's own cost on a busy machine.
//!
//! `cargo run --release -p smdebug-candle --example overhead_cpu -- [steps] [case] [dir]`
//! (`case`: `no_hook`, `interval_500`, `recorder`, `reductions`, or `all`, the default;
//! `dir`: where the temporary trials go, default the system's temporary folder — a tmpfs
//! such as `/dev/shm` leaves out the file system's own cost).

use std::time::{Duration, Instant};

use smdebug_candle::demo::{Demo, Scenario};
use smdebug_hook::{FlightRecorder, SaveConfig, SaveConfigMode};

// As in the bench and the CLI.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// User + system CPU time of every thread of this process, by thread name, read from
/// `/proc/self/task/*/stat` (in clock ticks, converted with the usual 100 Hz).
fn thread_times() -> Vec<(String, Duration)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // Fields 14 and 15 of stat (utime, stime), counted from the state field (3).
        let t = ticks(11) + ticks(12);
        out.push((name, Duration::from_millis(t * 10)));
    }
    out
}

fn process_cpu() -> Duration {
    let mut ru = std::mem::MaybeUninit::<libc_rusage::Rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF = 0.
    let ru = unsafe {
        libc_rusage::getrusage(0, ru.as_mut_ptr());
        ru.assume_init()
    };
    let tv = |t: libc_rusage::Timeval| {
        Duration::from_secs(t.sec as u64) + Duration::from_micros(t.usec as u64)
    };
    tv(ru.utime) + tv(ru.stime)
}

/// The two fields of `struct rusage` needed here, without a libc dependency.
mod libc_rusage {
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Timeval {
        pub sec: i64,
        pub usec: i64,
    }
    #[repr(C)]
    pub struct Rusage {
        pub utime: Timeval,
        pub stime: Timeval,
        pub rest: [i64; 14],
    }
    extern "C" {
        pub fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    }
}

fn run(case: &str, steps: u32, dir: &std::path::Path) {
    let mut demo = Demo::new(Scenario::Healthy, 1).expect("demo network");
    let mut hook = match case {
        "no_hook" => None,
        "interval_500" | "reductions" | "recorder" => {
            let out = dir.join(case);
            let b = Demo::hook_builder(out.to_str().expect("utf-8")).expect("config");
            let b = if case == "interval_500" {
                b.save_config(SaveConfig::new(SaveConfigMode::every(500)))
            } else if case == "recorder" {
                b.save_config(SaveConfig::new(SaveConfigMode::every(500)))
                    .flight_recorder(FlightRecorder {
                        steps: 10,
                        ..Default::default()
                    })
            } else {
                b.save_config(SaveConfig::new(SaveConfigMode::every(1)))
                    .reduction_config(Demo::reductions_only())
            };
            Some(demo.register(b.build().expect("hook")).expect("register"))
        }
        other => panic!("unknown case {other}"),
    };
    // Warm-up: first-step preparation, page faults of the buffers.
    for _ in 0..50 {
        demo.train_step(hook.as_mut()).expect("step");
    }
    if let Some(h) = hook.as_mut() {
        h.hook_mut().flush().expect("flush");
    }
    let threads0 = thread_times();
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    for _ in 0..steps {
        demo.train_step(hook.as_mut()).expect("step");
    }
    if let Some(h) = hook.as_mut() {
        // The writer's work for these steps belongs to them.
        h.hook_mut().flush().expect("flush");
    }
    let wall = t0.elapsed();
    let cpu = process_cpu() - cpu0;
    let threads1 = thread_times();
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(steps);
    println!(
        "{case:>13}: cpu {:8.1} µs/step  wall {:8.1} µs/step",
        per(cpu),
        per(wall)
    );
    let total = |ts: &[(String, Duration)], name: &str| {
        ts.iter()
            .filter(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .sum::<Duration>()
    };
    let mut names: Vec<&String> = threads1.iter().map(|(n, _)| n).collect();
    names.sort();
    names.dedup();
    for name in names {
        let d = total(&threads1, name).saturating_sub(total(&threads0, name));
        if !d.is_zero() {
            println!("{:>15}  {name:<20} {:8.1} µs/step", "", per(d));
        }
    }
    if let Some(h) = hook {
        h.close().expect("close");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let steps: u32 = args.next().map_or(2000, |s| s.parse().expect("steps"));
    let cases: Vec<String> = match args.next() {
        Some(c) if c != "all" => vec![c],
        _ => ["no_hook", "interval_500", "recorder", "reductions"]
            .map(String::from)
            .to_vec(),
    };
    let dir = match args.next() {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .expect("temp dir");
    for c in &cases {
        run(c, steps, dir.path());
    }
}
