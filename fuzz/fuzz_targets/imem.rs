//! Instruction memory as `Instructions.mem` or `render --shader` hands it over: any 64-bit
//! words (entry table + user code) run on a small scene. Faults (hang, watchdog, runaway)
//! are fine; panics are not. Each input renders twice, core by core and in one lock-step
//! group, which must agree exactly: the same frame and instruction count, or the same
//! error. Input: big-endian 8-byte words, at most the 129 IMEM holds.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use theia::emu::isa::registers::IMEM_WORDS;
use theia::emu::isa::Word;
use theia::emu::machine::{render, Lockstep, RenderOptions};
use theia::io::scene::mem::{parse_params, parse_vertices};
use theia::io::scene::Scene;

/// 4 x 4 pixels in two bands, one triangle, an all-black 256 x 256 texture.
fn scene() -> &'static Scene {
    static SCENE: OnceLock<Scene> = OnceLock::new();
    SCENE.get_or_init(|| {
        let (config, partitions) = parse_params(
            include_str!("../seeds/mem/params.mem"),
            Path::new("params.mem"),
        )
        .expect("the seed Params.mem reads");
        let triangles = parse_vertices(
            include_str!("../seeds/mem/vertex.mem"),
            Path::new("vertex.mem"),
        )
        .expect("the seed Vertex.mem reads");
        Scene {
            name: "fuzz".into(),
            config: config.try_into().expect("6 rows"),
            partitions,
            triangles,
            texture: vec![0; 256 * 256 * 3],
            control_register: 0,
            program: None,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let words: Vec<Word> = data
        .chunks_exact(8)
        .take(IMEM_WORDS)
        .map(|chunk| Word(u64::from_be_bytes(chunk.try_into().unwrap())))
        .collect();
    // Culling applies when the entry table keeps the ROM's MAIN; let the input choose
    // whether the lone cores cull (groups interpret every triangle test).
    let culling = data.len() % 2 == 0;
    let renders = [Lockstep::Never, Lockstep::Always].map(|lockstep| {
        let options = RenderOptions {
            // 4 bands of one row: 4 cores, one group of 4 lanes.
            cores: Some(4),
            imem: Some(words.clone()),
            max_steps: Some(5_000),
            culling: culling && lockstep == Lockstep::Never,
            lockstep,
            ..Default::default()
        };
        render(scene(), &options)
    });
    match &renders {
        [Ok(alone), Ok(grouped)] => {
            assert!(alone.frame == grouped.frame, "the frames differ");
            assert_eq!(alone.instructions, grouped.instructions);
        }
        [Err(alone), Err(grouped)] => assert_eq!(alone.to_string(), grouped.to_string()),
        [alone, grouped] => panic!(
            "core by core: {:?}; lock-step: {:?}",
            alone.as_ref().map(|r| r.instructions),
            grouped.as_ref().map(|r| r.instructions)
        ),
    }
});
