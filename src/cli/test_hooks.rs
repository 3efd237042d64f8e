//! Hooks for the binary's own tests: with `THEIA_TEST_HOLD=DIR` in the environment a run
//! stops at a named point until the test lets it go, so a test can signal the process, or
//! edit a file, at exactly that point instead of hoping a render lasts long enough.
//!
//! At point `P` the process writes `DIR/P.reached` (holding the temporary file's path for
//! `write`) and waits until `DIR/P.release` exists. Each point holds once per run: after its
//! release, reaching it again passes straight through. The points: `render` (the frame is
//! about to be rendered) and `write` (the output's bytes are in the temporary file, not yet
//! renamed onto the output).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The variable naming the hold directory.
const HOLD: &str = "THEIA_TEST_HOLD";

fn hold_dir() -> Option<PathBuf> {
    std::env::var_os(HOLD).map(PathBuf::from)
}

/// Installs the hooks the library offers when the variable is set.
pub fn install() {
    if hold_dir().is_some() {
        theia::io::image::set_before_rename_hook(|temporary| hold_at("write", temporary));
    }
}

/// Waits at `point` while the variable is set and the point is not released.
pub fn hold(point: &str) {
    hold_at(point, Path::new(""));
}

fn hold_at(point: &str, detail: &Path) {
    let Some(dir) = hold_dir() else { return };
    let release = dir.join(format!("{point}.release"));
    if release.exists() {
        return;
    }
    // Written whole and renamed, so the test never reads half of it.
    let reached = dir.join(format!("{point}.reached"));
    let partial = dir.join(format!("{point}.reached.part"));
    if std::fs::write(&partial, detail.as_os_str().as_encoded_bytes()).is_err()
        || std::fs::rename(&partial, &reached).is_err()
    {
        return;
    }
    while !release.exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
}
