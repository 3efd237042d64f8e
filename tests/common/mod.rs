//! Shared test helpers: where the conformance data lives, and how a test that needs it is
//! marked.
//!
//! A test that reads `../shared` carries
//! `#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]`. The build script sets
//! the cfg `conformance_data` only when `../shared/conformance` exists or
//! `THEIA_REQUIRE_CONFORMANCE=1` (CI), so without the data such a test is reported as
//! ignored in `cargo test`'s summary, never as passed; reaching one of the helpers below
//! without the data (CI, or `--ignored`) fails with the missing path.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/<relative>` next to the project; panics if it is missing.
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

/// A conformance scene directory, e.g. `scenes_example3`; panics if it is missing.
pub fn conformance(scene: &str) -> PathBuf {
    shared_path(&format!("conformance/{scene}"))
}

/// Runs the `theia` binary in `dir` and waits for it.
pub fn theia(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_theia"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("theia runs")
}

/// Runs the `theia` binary in `dir`, expecting success; returns its stdout.
pub fn theia_ok(dir: &std::path::Path, args: &[&str]) -> String {
    let output = theia(dir, args);
    assert!(
        output.status.success(),
        "theia {}: {}",
        args.join(" "),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// Runs the `theia` binary in `dir`, expecting it to refuse with exit code 2; returns its
/// stderr.
pub fn theia_fails(dir: &std::path::Path, args: &[&str]) -> String {
    let output = theia(dir, args);
    assert_eq!(output.status.code(), Some(2), "theia {}", args.join(" "));
    text(&output.stderr)
}

/// Generated OBJ text (named `generated.obj`, no MTL or textures) loaded with `options`.
pub fn generated_scene(
    text: &str,
    options: &::theia::io::scene::obj::ObjOptions,
) -> ::theia::io::scene::Scene {
    use ::theia::io::scene::obj::{load_obj_text, MemoryAssets};
    load_obj_text(
        text,
        std::path::Path::new("generated.obj"),
        &MemoryAssets(&[]),
        options,
    )
    .expect("the generated mesh loads")
    .scene
}

/// A command's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
