//! `theia render … --watch`: render, then render again whenever the scene or shader
//! changes. A failed render (a shader that does not assemble, a broken OBJ) prints its
//! error and leaves the last good image in place.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context};
use notify::{EventKind, RecursiveMode, Watcher};

use super::render::{render_once, RenderArgs};
use super::{report, Outcome};

/// Editors save in bursts (truncate, write, rename): wait for this much quiet first.
const SETTLE: Duration = Duration::from_millis(150);

pub fn run(args: &RenderArgs) -> anyhow::Result<Outcome> {
    let shader = args.shader.shader.clone();
    let mut dirs = args.scene.watch_dirs();
    if let Some(shader) = &shader {
        dirs.push(parent_dir(shader));
    }
    if dirs.is_empty() {
        bail!(
            "--watch needs a scene file or a --shader to watch (the built-in scene never changes)"
        );
    }
    // The image itself may be written beside the scene: never react to it.
    let output = args.output_path();
    let relevant = |path: &Path| {
        !super::scene_args::same_path(path, &output) && args.scene.is_source(path)
            || shader
                .as_deref()
                .is_some_and(|s| super::scene_args::same_path(path, s))
    };

    let (events, changes) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(events).context("starting the file watcher")?;
    dirs.sort();
    dirs.dedup();
    for dir in &dirs {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .with_context(|| format!("{}: cannot watch", dir.display()))?;
    }

    loop {
        match render_once(args) {
            Ok(()) => {}
            Err(error) => {
                report(&error);
                eprintln!("(the last good image stays in place; fix the file and save to retry)");
            }
        }
        eprintln!("watching for changes (Ctrl-C to stop)");
        wait_for_change(&changes, &relevant)?;
    }
}

pub fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Blocks until a relevant file is created, written or replaced, then until the burst of
/// events settles.
pub fn wait_for_change(
    changes: &mpsc::Receiver<notify::Result<notify::Event>>,
    relevant: &dyn Fn(&Path) -> bool,
) -> anyhow::Result<()> {
    let is_change = |event: &notify::Result<notify::Event>| match event {
        Ok(event) => {
            matches!(
                event.kind,
                EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
            ) && event.paths.iter().any(|p| relevant(p))
        }
        Err(_) => false,
    };
    loop {
        let event = changes.recv().context("the file watcher stopped")?;
        if is_change(&event) {
            break;
        }
    }
    while changes.recv_timeout(SETTLE).is_ok() {}
    Ok(())
}
