//! `theia bench --thread-scaling`: whole-process time of `theia render` on 1, 2, 4, ...
//! host threads (`RAYON_NUM_THREADS`), with speed-up and efficiency against one thread.
//! Each measurement is a child process, so loading, planning, rendering and writing the
//! PNG all count, as a user waiting for the image sees them. Beside the time, the CPU time
//! the process used, against one thread's: where efficiency falls, it tells extra work
//! (the chunks' guesses and tracking, cache and memory contention: CPU grows) from threads
//! waiting (CPU stays). Threads beyond the machine's cores give the work of that split.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use theia::io::scene::generate::displaced_icosphere_obj;

/// One scene of the table: `theia render` arguments, the OBJ mesh among them generated.
struct Case {
    label: String,
    /// Subdivisions of the generated mesh (`None`: the built-in scene).
    mesh: Option<u32>,
    args: Vec<String>,
}

/// The scenes the table times: the built-in scene at 1920x1080, the 81,920-triangle mesh at
/// 1920x1080 with both ROMs, and the 1,310,720-triangle mesh at 256x256 (and at 1920x1080
/// with `large`). `cores`, when given, replaces each row's emulated core count.
fn cases(cores: Option<u32>, large: bool) -> Vec<Case> {
    let hd = ["--width", "1920", "--height", "1080"];
    let small = ["--width", "256", "--height", "256"];
    // (mesh subdivisions, label, size, ROM for meshes, default emulated cores)
    let mut rows = vec![
        (None, "built-in scene 1920x1080", hd, "fixed", 16),
        (
            Some(6),
            "81,920-triangle mesh 1920x1080, fixed ROM",
            hd,
            "fixed",
            16,
        ),
        (
            Some(6),
            "81,920-triangle mesh 1920x1080, faithful ROM",
            hd,
            "faithful",
            4,
        ),
        (
            Some(8),
            "1,310,720-triangle mesh 256x256, fixed ROM",
            small,
            "fixed",
            16,
        ),
    ];
    if large {
        rows.push((
            Some(8),
            "1,310,720-triangle mesh 1920x1080, fixed ROM",
            hd,
            "fixed",
            16,
        ));
    }
    rows.into_iter()
        .map(|(mesh, label, size, rom, default_cores)| {
            let cores = cores.unwrap_or(default_cores);
            let mut args: Vec<String> = size.into_iter().map(String::from).collect();
            if mesh.is_some() {
                args.extend(["--rom".into(), rom.into()]);
            }
            args.extend(["--cores".into(), cores.to_string()]);
            Case {
                label: format!("{label}, --cores {cores}"),
                mesh,
                args,
            }
        })
        .collect()
}

/// 1, 2, 4, ... up to `max`, and `max` itself.
pub fn thread_counts(max: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = std::iter::successors(Some(1), |&t| Some(t * 2))
        .take_while(|&t| t < max)
        .collect();
    counts.push(max.max(1));
    counts
}

/// Times every case on every thread count (the best of `runs` each, thread counts
/// alternated run by run) and returns the table.
pub fn table(
    cores: Option<u32>,
    max_threads: usize,
    runs: u32,
    large: bool,
) -> anyhow::Result<String> {
    let exe = std::env::current_exe()?;
    let dir = std::env::temp_dir().join(format!("theia-thread-scaling-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure_all(&exe, &dir, cores, max_threads, runs, large);
    std::fs::remove_dir_all(&dir).ok();
    let rows = result?;
    Ok(format_table(&rows, max_threads))
}

/// One case's fastest whole-process run per thread count.
pub struct Timed {
    pub label: String,
    pub runs: Vec<Run>,
}

/// One `theia render` process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub threads: usize,
    /// Start to exit.
    pub seconds: f64,
    /// User and system CPU time, where the platform tells.
    pub cpu: Option<f64>,
}

fn measure_all(
    exe: &Path,
    dir: &Path,
    cores: Option<u32>,
    max_threads: usize,
    runs: u32,
    large: bool,
) -> anyhow::Result<Vec<Timed>> {
    let counts = thread_counts(max_threads);
    let mut rows = Vec::new();
    for case in cases(cores, large) {
        let mut args = case.args;
        if let Some(subdivisions) = case.mesh {
            args.insert(0, mesh_file(dir, subdivisions)?.display().to_string());
        }
        args.extend([
            "-q".into(),
            "-o".into(),
            dir.join("frame.png").display().to_string(),
        ]);
        let mut best: Vec<Option<Run>> = vec![None; counts.len()];
        for _ in 0..runs.max(1) {
            for (slot, &threads) in counts.iter().enumerate() {
                let run = run_render(exe, &args, threads)?;
                if best[slot].is_none_or(|best| run.seconds < best.seconds) {
                    best[slot] = Some(run);
                }
            }
        }
        rows.push(Timed {
            label: case.label,
            runs: best.into_iter().flatten().collect(),
        });
    }
    Ok(rows)
}

/// The generated mesh's OBJ in `dir` (written once).
fn mesh_file(dir: &Path, subdivisions: u32) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("icosphere{subdivisions}.obj"));
    if !path.exists() {
        std::fs::write(&path, displaced_icosphere_obj(subdivisions, 0.08))?;
    }
    Ok(path)
}

/// `theia render args` on `threads` host threads: its seconds, start to exit, and CPU time.
fn run_render(exe: &Path, args: &[String], threads: usize) -> anyhow::Result<Run> {
    let (start, cpu_before) = (Instant::now(), children_cpu_seconds());
    let output = Command::new(exe)
        .arg("render")
        .args(args)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .stdin(Stdio::null())
        .output()?;
    let seconds = start.elapsed().as_secs_f64();
    // Children are waited for one at a time: the sum grew by this one's.
    let cpu = children_cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    if !output.status.success() {
        anyhow::bail!(
            "theia render {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(Run {
        threads,
        seconds,
        cpu,
    })
}

/// User and system CPU seconds of this process's children that have ended and been waited
/// for.
#[cfg(unix)]
fn children_cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes the whole struct when it returns 0, and only then is it read.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

#[cfg(not(unix))]
fn children_cpu_seconds() -> Option<f64> {
    None
}

/// The table: per case, per thread count, seconds, speed-up over one thread and
/// efficiency (speed-up / threads), then CPU seconds and their ratio to one thread's.
pub fn format_table(rows: &[Timed], max_threads: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<62} {:>7} {:>9} {:>8} {:>10} {:>7} {:>7}",
        "scene", "threads", "process s", "speed-up", "efficiency", "CPU s", "CPU"
    );
    for row in rows {
        let Some(one) = row.runs.first() else {
            continue;
        };
        for (k, run) in row.runs.iter().enumerate() {
            let label = if k == 0 { row.label.as_str() } else { "" };
            let speed_up = one.seconds / run.seconds;
            let efficiency = 100.0 * speed_up / run.threads as f64;
            let (cpu, ratio) = match (run.cpu, one.cpu) {
                (Some(cpu), Some(base)) => (format!("{cpu:.3}"), format!("{:.2}x", cpu / base)),
                _ => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                out,
                "{label:<62} {:>7} {:>9.3} {speed_up:>7.2}x {efficiency:>9.0}% {cpu:>7} {ratio:>7}",
                run.threads, run.seconds
            );
        }
    }
    let _ = writeln!(
        out,
        "whole process (load, plan, render, PNG), best of the runs; CPU: user and system time of that run, against one thread's; {max_threads} threads available"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_double_up_to_the_machine() {
        assert_eq!(thread_counts(1), vec![1]);
        assert_eq!(thread_counts(2), vec![1, 2]);
        assert_eq!(thread_counts(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(thread_counts(12), vec![1, 2, 4, 8, 12]);
    }

    #[test]
    fn speed_up_efficiency_and_cpu_are_against_one_thread() {
        let run = |threads, seconds, cpu| Run {
            threads,
            seconds,
            cpu,
        };
        let rows = [Timed {
            label: "scene".into(),
            runs: vec![
                run(1, 8.0, Some(7.5)),
                run(2, 4.0, Some(7.8)),
                run(4, 2.5, Some(9.0)),
            ],
        }];
        let table = format_table(&rows, 4);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].starts_with("scene "), "{table}");
        assert!(
            lines[1].ends_with("1     8.000    1.00x       100%   7.500   1.00x"),
            "{table}"
        );
        assert!(
            lines[2].ends_with("2     4.000    2.00x       100%   7.800   1.04x"),
            "{table}"
        );
        assert!(
            lines[3].ends_with("4     2.500    3.20x        80%   9.000   1.20x"),
            "{table}"
        );
        // Where the platform does not tell, the CPU columns say so.
        let rows = [Timed {
            label: "scene".into(),
            runs: vec![run(1, 8.0, None), run(2, 4.0, None)],
        }];
        let table = format_table(&rows, 2);
        assert!(
            table
                .lines()
                .nth(2)
                .unwrap()
                .ends_with("100%       -       -"),
            "{table}"
        );
    }

    /// A child's CPU time is counted once it has been waited for.
    #[cfg(unix)]
    #[test]
    fn a_waited_child_s_cpu_time_is_counted() {
        let before = children_cpu_seconds().expect("getrusage");
        let status = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh runs");
        assert!(status.success());
        let spent = children_cpu_seconds().expect("getrusage") - before;
        assert!(spent > 0.01, "{spent}");
    }
}
