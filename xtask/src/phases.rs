//! Wall and CPU time per phase of a workflow, printed as a table when the workflow ends
//! (also when it fails), so that every CI log shows where its time went.
//!
//! CPU is counted twice: `ours` is the user and system time of this process's finished
//! children (cargo, rustc, pip, pytest, … as the kernel adds them up once waited for), and
//! `machine` is the busy time of all cores from `/proc/stat`, which also holds the test
//! services running in the background and anything else on the machine.
use crate::util::step;
use std::time::Instant;

/// Clock ticks per second of `/proc` times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds at one moment: (finished children of this process, whole machine busy).
#[derive(Clone, Copy, Default)]
struct Cpu {
    children: f64,
    machine: f64,
}

impl Cpu {
    fn now() -> Cpu {
        Cpu {
            children: children_cpu().unwrap_or(0.0),
            machine: machine_busy().unwrap_or(0.0),
        }
    }
}

/// `cutime + cstime` of `/proc/self/stat`, in seconds.
fn children_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at field 3 (`state`);
    // cutime and cstime are fields 16 and 17.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let cutime: f64 = fields.get(13)?.parse().ok()?;
    let cstime: f64 = fields.get(14)?.parse().ok()?;
    Some((cutime + cstime) / TICKS_PER_SECOND)
}

/// Busy time of all cores since boot (the `cpu` line of `/proc/stat` less idle and
/// iowait), in seconds.
fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let busy: f64 = v.iter().take(8).sum::<f64>() - v.get(3)? - v.get(4)?;
    Some(busy / TICKS_PER_SECOND)
}

struct Row {
    name: String,
    wall: f64,
    cpu: Cpu,
}

/// The phases of one run. `begin` ends the phase before it; dropping prints the table.
pub struct Phases {
    title: &'static str,
    started: (Instant, Cpu),
    current: Option<(String, Instant, Cpu)>,
    rows: Vec<Row>,
}

impl Phases {
    /// Starts counting; `title` heads the table.
    pub fn new(title: &'static str) -> Phases {
        Phases {
            title,
            started: (Instant::now(), Cpu::now()),
            current: None,
            rows: Vec::new(),
        }
    }

    /// Ends the current phase and starts `name` (printed as a step header).
    pub fn begin(&mut self, name: &str) {
        self.end();
        step(name);
        self.current = Some((name.to_owned(), Instant::now(), Cpu::now()));
    }

    /// Ends the current phase, if any.
    pub fn end(&mut self) {
        if let Some((name, t0, c0)) = self.current.take() {
            let c1 = Cpu::now();
            self.rows.push(Row {
                name,
                wall: t0.elapsed().as_secs_f64(),
                cpu: Cpu {
                    children: c1.children - c0.children,
                    machine: c1.machine - c0.machine,
                },
            });
        }
    }

    /// The table: one line per phase and the total.
    pub fn table(&self) -> String {
        let width = self
            .rows
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let mut out = format!(
            "\n{}: wall and CPU per phase (CPU of our processes / of the whole machine)\n",
            self.title
        );
        let line = |name: &str, wall: f64, cpu: Cpu| {
            format!(
                "  {name:<width$}  {:>9}  cpu {:>9} / {:>9}\n",
                minutes(wall),
                minutes(cpu.children),
                minutes(cpu.machine)
            )
        };
        for r in &self.rows {
            out += &line(&r.name, r.wall, r.cpu);
        }
        let now = Cpu::now();
        out += &line(
            "total",
            self.started.0.elapsed().as_secs_f64(),
            Cpu {
                children: now.children - self.started.1.children,
                machine: now.machine - self.started.1.machine,
            },
        );
        out
    }
}

impl Drop for Phases {
    fn drop(&mut self) {
        self.end();
        eprint!("{}", self.table());
    }
}

/// `12m 05s` (or `7.3s` under a minute).
fn minutes(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1}s")
    } else {
        let s = seconds.round() as u64;
        format!("{}m {:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_times_and_formats_them() {
        assert!(children_cpu().is_some());
        assert!(machine_busy().unwrap() > 0.0);
        assert_eq!(minutes(7.25), "7.2s");
        assert_eq!(minutes(725.0), "12m 05s");
        let mut p = Phases::new("t");
        p.begin("one");
        p.end();
        let table = p.table();
        assert!(table.contains("  one  "), "{table}");
        assert!(table.contains("total"), "{table}");
    }
}
