//! Distributed rendering as users run it: `contrib/slurm/render.sh` on a real single-node
//! Slurm cluster this test starts (munged, slurmctld, slurmd as root, configuration and
//! state in a temporary directory, `proctrack/linuxproc`) and stops by the pids it
//! started, pass or fail; and the README's GNU parallel split. Every result is compared
//! with the one-process render, byte for byte.
//!
//! Without Debian's `slurm-wlm` and `munge` (or root), or without `parallel`, the build
//! script leaves the cfgs `slurm_cluster` / `gnu_parallel` unset and these tests show as
//! ignored; with `THEIA_REQUIRE_CONFORMANCE=1` (CI, whose `.ci/run` installs them) they
//! run and fail when the tools are missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{text, theia_ok as ok};

const THEIA: &str = env!("CARGO_BIN_EXE_theia");

fn render_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/slurm/render.sh")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A single-node cluster: the daemons it started, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    daemons: Vec<(&'static str, Child)>,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut cluster = Cluster {
            dir,
            daemons: Vec::new(),
        };
        let root = cluster.dir.path().to_path_buf();
        for sub in ["state", "spool", "log"] {
            std::fs::create_dir(root.join(sub)).unwrap();
        }
        // A key of its own, so the cluster authenticates nobody else.
        let key = root.join("munge.key");
        let bytes: Vec<u8> = (0..128u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ std::process::id() as u8)
            .collect();
        std::fs::write(&key, bytes).unwrap();
        set_mode(&key, 0o600);
        let socket = root.join("munge.socket");
        cluster.spawn(
            "munged",
            Command::new("munged").args([
                "--foreground".into(),
                "--force".into(),
                format!("--key-file={}", key.display()),
                format!("--socket={}", socket.display()),
                format!("--pid-file={}", root.join("munged.pid").display()),
                format!("--log-file={}", root.join("log/munged.log").display()),
                format!("--seed-file={}", root.join("munged.seed").display()),
            ]),
        );
        wait_for(&format!("munged's socket {}", socket.display()), || {
            socket.exists()
        });
        let host = hostname();
        let [controller_port, node_port] = free_ports();
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let conf = format!(
            "ClusterName=theia-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={controller_port}
SlurmdPort={node_port}
AuthType=auth/munge
AuthInfo=socket={socket}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=sched_interval=2
MinJobAge=600
ReturnToService=2
NodeName=theia-node NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=theia Nodes=theia-node Default=YES MaxTime=INFINITE State=UP
",
            socket = socket.display(),
            root = root.display(),
        );
        std::fs::write(root.join("slurm.conf"), conf).unwrap();
        let conf = cluster.conf();
        cluster.spawn(
            "slurmctld",
            Command::new("slurmctld")
                .args(["-D", "-i"])
                .env("SLURM_CONF", &conf),
        );
        cluster.spawn(
            "slurmd",
            Command::new("slurmd")
                .args(["-D", "-N", "theia-node"])
                .env("SLURM_CONF", &conf),
        );
        let mut states = String::new();
        let ready = poll(Duration::from_secs(60), || {
            let output = cluster
                .client("sinfo")
                .args(["--noheader", "--format=%T"])
                .output();
            states = output.map(|o| text(&o.stdout)).unwrap_or_default();
            states.trim() == "idle"
        });
        assert!(
            ready,
            "the node is not idle after 60 s (sinfo: {states:?})\n{}",
            cluster.logs()
        );
        cluster
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm client command for this cluster.
    fn client(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", self.conf());
        command
    }

    fn spawn(&mut self, name: &'static str, command: &mut Command) {
        let log = std::fs::File::create(self.dir.path().join(format!("log/{name}.out"))).unwrap();
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{name} does not start: {e} (apt-get install slurm-wlm munge)")
            });
        self.daemons.push((name, child));
    }

    /// The daemons' logs, for a failure message.
    fn logs(&self) -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(self.dir.path().join("log")).unwrap() {
            let path = entry.unwrap().path();
            let content = std::fs::read_to_string(&path).unwrap_or_default();
            let tail: Vec<&str> = content.lines().rev().take(15).collect();
            all += &format!("--- {}\n", path.display());
            for line in tail.iter().rev() {
                all += line;
                all.push('\n');
            }
        }
        all
    }

    /// Runs render.sh with this cluster, in `dir`.
    fn render_sh(&self, dir: &Path, args: &[&str]) -> Output {
        Command::new("bash")
            .arg(render_sh())
            .args(args)
            .current_dir(dir)
            .env("SLURM_CONF", self.conf())
            .env("THEIA", THEIA)
            .env("RENDER_SH_POLL", "0.3")
            .output()
            .expect("bash runs")
    }
}

impl Drop for Cluster {
    /// Stops the daemons this cluster started, by their pids, newest first.
    fn drop(&mut self) {
        for (_, child) in self.daemons.iter_mut().rev() {
            // SAFETY: kill(2) on a pid this process spawned and has not reaped yet.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let stopped = poll(Duration::from_secs(10), || {
                matches!(child.try_wait(), Ok(Some(_)))
            });
            if !stopped {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn hostname() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its length.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    assert_eq!(result, 0, "gethostname fails");
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    let name = String::from_utf8_lossy(&buffer[..end]).into_owned();
    name.split('.').next().unwrap_or(&name).to_string()
}

/// Two TCP ports free at the moment (the OS's choice), so the cluster clashes with no
/// other on this machine.
fn free_ports() -> [u16; 2] {
    let listeners = [(); 2].map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    listeners.map(|l| l.local_addr().unwrap().port())
}

/// Calls `done` until it says yes or `limit` passes; whether it said yes.
fn poll(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    done()
}

fn wait_for(what: &str, done: impl FnMut() -> bool) {
    assert!(poll(Duration::from_secs(20), done), "{what} did not appear");
}

fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    );
}

#[test]
#[cfg_attr(not(slurm_cluster), ignore = "needs slurm-wlm, munge and root")]
fn slurm_array_jobs_render_bands_and_orbits_identical_to_one_process() {
    let start = Instant::now();
    let cluster = Cluster::start();
    println!("cluster started in {:.1} s", start.elapsed().as_secs_f64());
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();

    // The built-in scene in 4 bands.
    let begun = Instant::now();
    let output = cluster.render_sh(dir, &["-o", "out/default.png", "--bands", "4"]);
    assert_success(&output, "render.sh --bands 4");
    println!(
        "4 bands: {:.1} s\n{}",
        begun.elapsed().as_secs_f64(),
        text(&output.stdout)
    );
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("4 tasks: 1 frame(s) x 4 band(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("band 3/4 of 256x256 pixels, rows 192 to 255"),
        "{stdout}"
    );
    ok(dir, &["render", "-q", "-o", "one.png"]);
    assert_eq!(
        read(&dir.join("out/default.png")),
        read(&dir.join("one.png"))
    );

    // An 8-frame turntable of a small generated mesh, one task per frame, assembled.
    let mesh = theia::io::scene::generate::displaced_icosphere_obj(3, 0.15);
    std::fs::write(dir.join("mesh.obj"), mesh).unwrap();
    let size = ["--width", "80", "--height", "60"];
    let mut args = vec![
        "mesh.obj",
        "-o",
        "out/spin.png",
        "--orbit",
        "360",
        "--frames",
        "8",
    ];
    args.extend(size);
    args.extend(["--sbatch", "--partition=theia --time=10"]);
    let begun = Instant::now();
    let output = cluster.render_sh(dir, &args);
    assert_success(&output, "render.sh --orbit 360 --frames 8");
    println!("8 frames: {:.1} s", begun.elapsed().as_secs_f64());
    let mut one = vec![
        "render", "-q", "mesh.obj", "--orbit", "360", "--frames", "8",
    ];
    one.extend(size);
    one.extend(["-o", "one/f-%04d.png"]);
    ok(dir, &one);
    let mut frames = Vec::new();
    for k in 0..8 {
        let name = format!("f-{k:04}.png");
        let slurm = dir.join(format!("out/spin.parts/frame-{k:04}.png"));
        assert_eq!(
            read(&slurm),
            read(&dir.join("one").join(&name)),
            "frame {k}"
        );
        frames.push(format!("one/{name}"));
    }
    let mut animate = vec!["merge", "-q", "--animate", "-o", "one.png"];
    animate.extend(frames.iter().map(String::as_str));
    ok(dir, &animate);
    assert_eq!(read(&dir.join("out/spin.png")), read(&dir.join("one.png")));

    // Failing tasks: named, and no merge.
    let output = cluster.render_sh(
        dir,
        &["-o", "out/fail.png", "--bands", "2", "--max-steps", "10"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(": 2 of 2 tasks failed; the merge job "),
        "{stderr}"
    );
    assert!(
        stderr.contains("task 0 (band 0/2) failed with exit status 2: error: core 0, pixel (0, 0)"),
        "{stderr}"
    );
    assert!(!dir.join("out/fail.png").exists());

    // sbatch flags pass through: an unknown partition is sbatch's error.
    let output = cluster.render_sh(
        dir,
        &[
            "-o",
            "out/x.png",
            "--bands",
            "2",
            "--sbatch",
            "--partition=nowhere",
        ],
    );
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("Invalid partition name specified"),
        "{}",
        text(&output.stderr)
    );
    println!("whole test: {:.1} s", start.elapsed().as_secs_f64());
}

#[test]
#[cfg_attr(not(gnu_parallel), ignore = "needs GNU parallel")]
fn gnu_parallel_renders_bands_that_merge_identical_to_one_process() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // The README's commands, with this build's binary.
    let script = format!(
        "set -e
parallel -j 2 {THEIA} render -q --cores 8 --band {{}}/4 -o parts/band-{{}}.png ::: 0 1 2 3
{THEIA} merge -q parts/band-*.png -o out/default.png"
    );
    let output = Command::new("bash")
        .args(["-c", &script])
        .current_dir(dir)
        .env("HOME", dir) // parallel writes its ~/.parallel state here
        .output()
        .expect("bash runs");
    assert_success(&output, "parallel");
    ok(dir, &["render", "-q", "--cores", "8", "-o", "one.png"]);
    assert_eq!(
        read(&dir.join("out/default.png")),
        read(&dir.join("one.png"))
    );
}
