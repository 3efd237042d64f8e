//! Criterion benchmarks: the interpreter's speed (emulated instructions per second on one
//! core, culling off) and frame times on one core and on all cores for scenes_example3,
//! the built-in OBJ scene and a 5120-triangle UV sphere. `theia::tools::bench::run` takes the
//! same measurements in one go and prints them as a table.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use theia::emu::machine::{Lockstep, Machine, RenderOptions};
use theia::io::scene::obj::{default_scene, ObjOptions};
use theia::io::scene::Scene;
use theia::tools::bench::{sphere_scene, Pools};

fn example3() -> Option<Scene> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/scenes_example3");
    if !dir.exists() {
        eprintln!("skipping scenes_example3: {} not found", dir.display());
        return None;
    }
    Some(theia::io::scene::mem::load_scene_dir(&dir).expect("scenes_example3 loads"))
}

fn pools() -> Pools {
    Pools::new(None).expect("worker threads start")
}

/// Throughput in emulated instructions: criterion reports instructions per second.
fn interpreter(c: &mut Criterion) {
    let Some(scene) = example3() else {
        return;
    };
    let pools = pools();
    let mut group = c.benchmark_group("interpreter");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    // On one core the 8 cores run as one lock-step group (Auto); core by core for
    // comparison.
    for (label, lockstep) in [
        ("lock-step", Lockstep::Auto),
        ("core by core", Lockstep::Never),
    ] {
        let options = RenderOptions {
            culling: false,
            lockstep,
            ..Default::default()
        };
        let machine = Machine::new(&scene, &options).expect("machine");
        let instructions = pools
            .one
            .install(|| machine.render(None))
            .expect("renders")
            .instructions;
        group.throughput(Throughput::Elements(instructions));
        group.bench_function(
            BenchmarkId::new("scenes_example3 instructions, 1 core", label),
            |b| b.iter(|| pools.one.install(|| machine.render(None)).expect("renders")),
        );
    }
    group.finish();
}

/// Frame time of `scene` (default options, culling on) on one core and on all cores.
fn frame_times(c: &mut Criterion, group_name: &str, scene: &Scene, samples: usize) {
    let machine = Machine::new(scene, &RenderOptions::default()).expect("machine");
    let pools = pools();
    let mut group = c.benchmark_group(group_name);
    group.sample_size(samples);
    group.measurement_time(Duration::from_secs(5));
    // Frames of the large scene take seconds: one iteration per sample.
    group.sampling_mode(SamplingMode::Flat);
    for (label, pool) in [("1 core", &pools.one), ("all cores", &pools.all)] {
        group.bench_function(BenchmarkId::new("frame", label), |b| {
            b.iter(|| pool.install(|| machine.render(None)).expect("renders"))
        });
    }
    group.finish();
}

fn frames(c: &mut Criterion) {
    if let Some(scene) = example3() {
        frame_times(c, "scenes_example3", &scene, 10);
    }
    let default = default_scene::load(&ObjOptions::default())
        .expect("the built-in scene loads")
        .scene;
    frame_times(c, "default OBJ scene", &default, 10);
    let sphere = sphere_scene(64, 41, 256).expect("the sphere loads");
    assert!(sphere.triangles.len() >= 5000);
    frame_times(c, "UV sphere 5120 triangles 256x256", &sphere, 10);
}

criterion_group!(benches, interpreter, frames);
criterion_main!(benches);
