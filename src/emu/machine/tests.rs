//! The machine's constructor and its render, on small scenes; helpers for the unit tests
//! of `machine/`'s files.

use super::*;
use crate::io::scene::obj::{default_scene, ObjOptions};
use std::sync::atomic::Ordering;

/// The built-in scene at `width` x `height`, on 4 cores.
pub(crate) fn tiny_scene(width: u32, height: u32) -> Scene {
    default_scene::load(&ObjOptions {
        width,
        height,
        ..ObjOptions::default()
    })
    .expect("the built-in scene loads")
    .scene
}

fn error(scene: &Scene, options: RenderOptions) -> String {
    match Machine::new(scene, &options) {
        Ok(_) => panic!("a machine"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn cores_are_between_one_and_the_rows() {
    let scene = tiny_scene(8, 6);
    let cores = |n| RenderOptions {
        cores: Some(n),
        ..RenderOptions::default()
    };
    assert_eq!(error(&scene, cores(0)), "--cores must be at least 1");
    assert_eq!(
        error(&scene, cores(7)),
        "--cores 7: at most 6 for this frame (each core renders a band of whole rows, and the frame has 6)"
    );
    let machine = Machine::new(&scene, &cores(6)).expect("one row per core");
    assert_eq!(machine.partitions().len(), 6);
    assert_eq!(machine.active(), 0..6);
    assert_eq!(machine.active_rows(), 0..6);
}

#[test]
fn a_band_renders_its_cores_and_their_rows() {
    let scene = tiny_scene(8, 6);
    let options = RenderOptions {
        cores: Some(3),
        band: Some(Band { index: 1, count: 2 }),
        ..RenderOptions::default()
    };
    let machine = Machine::new(&scene, &options).expect("a machine");
    assert_eq!(machine.active(), 2..3);
    assert_eq!(machine.active_rows(), 4..6);
    let cores: Vec<usize> = machine.active_partitions().map(|(core, _)| core).collect();
    assert_eq!(cores, [2]);
    let render = machine.render(None).expect("renders");
    assert_eq!(render.cores, 1);
    // Rows of the other band stay unwritten.
    assert!(render.frame.written[..3 * 8 * 4].iter().all(|&w| !w));
    assert!(render.frame.written[3 * 8 * 4..].iter().all(|&w| w));
    let wrong = RenderOptions {
        band: Some(Band { index: 2, count: 2 }),
        ..options
    };
    assert!(error(&scene, wrong).starts_with("band 2/2: "));
}

#[test]
fn the_machine_keeps_its_options() {
    let scene = tiny_scene(8, 6);
    let options = RenderOptions {
        max_steps: Some(12_345),
        culling: false,
        ..RenderOptions::default()
    };
    let machine = Machine::new(&scene, &options).expect("a machine");
    assert_eq!(machine.max_steps(), 12_345);
    assert!(matches!(machine.culler(), Err(Refusal::Disabled)));
    assert!(matches!(machine.accel(), Ok(None)));
    assert_eq!(machine.stage().isa(), TheiaPixelShader.isa());
    assert_eq!(machine.scene().triangles.len(), scene.triangles.len());
    let defaults = Machine::new(&scene, &RenderOptions::default()).expect("a machine");
    assert_eq!(
        defaults.max_steps(),
        default_max_steps(scene.triangles.len())
    );
    assert!(defaults.culler().is_ok());
}

#[test]
fn the_one_render_call_counts_progress_and_stops_on_cancel() {
    let scene = tiny_scene(12, 8);
    let progress = Arc::new(AtomicU64::new(0));
    let options = RenderOptions {
        ssaa: 2,
        progress: Some(progress.clone()),
        ..RenderOptions::default()
    };
    let render = render(&scene, &options).expect("renders");
    assert_eq!((render.frame.width, render.frame.height), (12, 8));
    assert_eq!(render.frame.unwritten_pixels(), 0);
    // Every one of the 24 x 16 samples is counted.
    assert_eq!(progress.load(Ordering::Relaxed), 24 * 16);
    let cancelled = RenderOptions {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..RenderOptions::default()
    };
    assert!(matches!(
        render_error(&scene, &cancelled),
        RenderError::Cancelled
    ));
}

fn render_error(scene: &Scene, options: &RenderOptions) -> RenderError {
    match render(scene, options) {
        Ok(_) => panic!("the raised flag stops the render"),
        Err(error) => error,
    }
}
