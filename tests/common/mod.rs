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

/// A conformance scene directory, e.g. `scenes_example3`.
pub fn conformance(scene: &str) -> Option<PathBuf> {
    shared(&format!("conformance/{scene}"))
}
