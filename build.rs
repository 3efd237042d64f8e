//! Tells the tests whether the conformance data is here: with `../shared/conformance` and
//! `../shared/spec` beside the project (or `THEIA_REQUIRE_CONFORMANCE=1`, which makes
//! their absence a test failure), the cfg `conformance_data` is set; without them, tests
//! marked `#[cfg_attr(not(conformance_data), ignore = "…")]` show as ignored in `cargo
//! test`'s summary instead of passing without checking anything. The cfgs `slurm_cluster`
//! and `gnu_parallel` do the same for the tests that need those tools installed, the cfg
//! `chromium` for the viewer's browser test, and the cfgs `avx2_host` and `avx512_host` mark
//! a machine with AVX2 or AVX-512F, for the tests of the vector paths.
//!
//! Likewise the cfg `rtl_oracle` (tests/rtl.rs: differential tests against the original
//! Verilog) needs `../shared/rtl` and Verilator on the PATH, or the same variable.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(conformance_data)");
    println!("cargo::rustc-check-cfg=cfg(rtl_oracle)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=THEIA_REQUIRE_CONFORMANCE");
    println!("cargo::rerun-if-env-changed=PATH");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    // The tests read both the scenes and the spec pack (the ROM's words, the opcode table).
    let shared: Vec<_> = ["conformance", "spec"]
        .iter()
        .map(|part| Path::new(&manifest).join("../shared").join(part))
        .collect();
    // Notice the data arriving or going: the directories themselves, or where they appear.
    for dir in &shared {
        let watched = if dir.is_dir() {
            dir.clone()
        } else {
            Path::new(&manifest).join("..")
        };
        println!("cargo::rerun-if-changed={}", watched.display());
    }
    let required = std::env::var("THEIA_REQUIRE_CONFORMANCE").as_deref() == Ok("1");
    if shared.iter().all(|dir| dir.is_dir()) || required {
        println!("cargo::rustc-cfg=conformance_data");
    }
    let rtl = Path::new(&manifest).join("../shared/rtl");
    let verilator = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| dir.join("verilator").is_file())
    });
    if (rtl.is_dir() && verilator) || required {
        println!("cargo::rustc-cfg=rtl_oracle");
    }
    // The same for the distributed-rendering tests (tests/slurm.rs): a single-node Slurm
    // cluster needs Debian's slurm-wlm and munge and root; the other test GNU parallel.
    tools_cfg(
        "slurm_cluster",
        &[
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
            "/usr/sbin/munged",
            "/usr/bin/sbatch",
        ],
        required,
        running_as_root(),
    );
    tools_cfg("gnu_parallel", &["/usr/bin/parallel"], required, true);
    // The viewer's browser test (tests/browser.rs): Debian's chromium, or Ubuntu's name.
    println!("cargo::rustc-check-cfg=cfg(chromium)");
    let browsers = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
    println!("cargo::rerun-if-changed=/usr/bin");
    if required || browsers.iter().any(|file| Path::new(file).exists()) {
        println!("cargo::rustc-cfg=chromium");
    }
    // The AVX2 paths' own tests (src/emu/machine/accel) need the instructions: on a machine
    // without them they show as ignored, not passed; CI requires them.
    println!("cargo::rustc-check-cfg=cfg(avx2_host)");
    if required || (target_is_x86_64() && host_has("avx2")) {
        println!("cargo::rustc-cfg=avx2_host");
    }
    // The AVX-512 path's tests show as ignored on a machine without it, even in CI: the
    // AVX2 path is the one every x86-64 machine CI may get is required to have.
    println!("cargo::rustc-check-cfg=cfg(avx512_host)");
    if target_is_x86_64() && host_has("avx512f") {
        println!("cargo::rustc-cfg=avx512_host");
    }
}

fn target_is_x86_64() -> bool {
    std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
}

/// Whether this machine, where the tests will run, has the x86 `feature`.
fn host_has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

/// Sets `cfg` when every one of `files` exists (and `condition`), or when required.
fn tools_cfg(cfg: &str, files: &[&str], required: bool, condition: bool) {
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    for file in files {
        // A file that appears or goes changes its directory.
        let path = Path::new(file);
        let watched = if path.exists() {
            path
        } else {
            path.parent().expect("absolute paths")
        };
        println!("cargo::rerun-if-changed={}", watched.display());
    }
    if required || (condition && files.iter().all(|file| Path::new(file).exists())) {
        println!("cargo::rustc-cfg={cfg}");
    }
}

fn running_as_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}
