//! Shared test helpers: where the conformance data lives, and the skip/require rule.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/<relative>` next to the project, if present. When `../shared` is absent the
/// test prints that it skipped and returns `None` — unless `THEIA_REQUIRE_CONFORMANCE=1`,
/// in which case it fails (CI sets it).
pub fn shared(relative: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(relative);
    if path.exists() {
        return Some(path);
    }
    if std::env::var("THEIA_REQUIRE_CONFORMANCE").as_deref() == Ok("1") {
        panic!(
            "{} is missing and THEIA_REQUIRE_CONFORMANCE=1",
            path.display()
        );
    }
    println!("skipped: {} not found", path.display());
    None
}

/// `../shared/<relative>` next to the project. For tests marked
/// `#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]`: the build script sets
/// `conformance_data` only when `../shared/conformance` exists or
/// `THEIA_REQUIRE_CONFORMANCE=1`, so reaching this without the data is a failure.
pub fn shared_path(relative: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(relative);
    assert!(
        path.exists(),
        "{} is missing (THEIA_REQUIRE_CONFORMANCE=1, or the test was run with --ignored)",
        path.display()
    );
    path
}

/// A conformance scene directory, e.g. `scenes_example3`.
pub fn conformance(scene: &str) -> Option<PathBuf> {
    shared(&format!("conformance/{scene}"))
}

/// Runs the `theia` binary in `dir` and waits for it.
pub fn theia(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_theia"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("theia runs")
}

/// A command's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
