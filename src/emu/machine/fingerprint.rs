//! The fingerprint of a render's inputs: a SHA-256 of everything that decides its pixels,
//! so that `theia merge` accepts only bands of one render. It hashes what the machine is
//! given after loading (configuration rows with camera and resolution, partitions,
//! triangles, texture memory, instruction memory, ROM, step budget), which covers the
//! scene files' contents and every option that changes them, plus whatever the caller
//! adds (a foreign shader's file and constants). Options that never change pixels (the
//! acceleration mode, the host's thread count, the band) stay out.

use sha2::{Digest, Sha256};

use super::{default_max_steps, Machine, RenderOptions};
use crate::io::scene::{Partition, Scene};

/// Builds a fingerprint from labelled fields (the labels and lengths keep fields apart).
pub struct Fingerprint(Sha256);

impl Fingerprint {
    /// The fingerprint of what `machine` renders (made with `options`), to which the
    /// caller adds what the options only hold opaquely (a foreign pixel stage's source).
    pub fn of_render(machine: &Machine<'_>, options: &RenderOptions) -> Fingerprint {
        Fingerprint::of_frame(machine.scene, &machine.partitions, options)
    }

    /// The fingerprint of a frame of `scene` rendered in `partitions` with `options` (as
    /// [`Fingerprint::of_render`] of its machine).
    pub fn of_frame(
        scene: &Scene,
        partitions: &[Partition],
        options: &RenderOptions,
    ) -> Fingerprint {
        let max_steps = options
            .max_steps
            .unwrap_or_else(|| default_max_steps(scene.triangles.len()));
        let mut print = Fingerprint(Sha256::new());
        print.add("theia", env!("CARGO_PKG_VERSION").as_bytes());
        print.add_words("config", scene.config.iter().flatten().copied());
        print.add_words(
            "partitions",
            partitions
                .iter()
                .flat_map(|p| p.initial.into_iter().chain(p.end)),
        );
        print.add_words(
            "triangles",
            scene.triangles.iter().flatten().flatten().copied(),
        );
        print.add_words("texture", scene.texture.iter().copied());
        print.add("creg", &scene.control_register.to_le_bytes());
        let imem = options.imem.as_ref().or(scene.program.as_ref());
        let imem: Vec<u8> = imem
            .into_iter()
            .flatten()
            .flat_map(|instruction| instruction.0.to_le_bytes())
            .collect();
        print.add("imem", &imem);
        print.add("rom", options.rom.name().as_bytes());
        print.add("max-steps", &max_steps.to_le_bytes());
        print
    }

    /// Adds a field.
    pub fn add(&mut self, label: &str, bytes: &[u8]) {
        for part in [label.as_bytes(), bytes] {
            self.0.update((part.len() as u64).to_le_bytes());
            self.0.update(part);
        }
    }

    fn add_words(&mut self, label: &str, words: impl Iterator<Item = u32>) {
        let bytes: Vec<u8> = words.flat_map(u32::to_le_bytes).collect();
        self.add(label, &bytes);
    }

    /// The digest as 64 lowercase hex digits.
    pub fn hex(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::scene::obj::{default_scene, ObjOptions};
    use crate::io::scene::Scene;

    #[test]
    fn pixel_changing_inputs_change_the_fingerprint_and_others_do_not() {
        let scene = default_scene::load(&ObjOptions::default()).unwrap().scene;
        let print = |scene: &Scene, options: &RenderOptions| {
            let machine = Machine::new(scene, options).unwrap();
            Fingerprint::of_render(&machine, options).hex()
        };
        let base = print(&scene, &RenderOptions::default());
        assert_eq!(base.len(), 64);
        assert_eq!(base, print(&scene, &RenderOptions::default()));
        let banded = RenderOptions {
            band: Some(crate::emu::machine::Band { index: 1, count: 2 }),
            accel: crate::emu::machine::AccelUse::Never,
            ..RenderOptions::default()
        };
        assert_eq!(base, print(&scene, &banded));
        let fixed = RenderOptions {
            rom: crate::emu::core::RomVariant::Fixed,
            ..RenderOptions::default()
        };
        assert_ne!(base, print(&scene, &fixed));
        let cores = RenderOptions {
            cores: Some(7),
            ..RenderOptions::default()
        };
        assert_ne!(base, print(&scene, &cores));
        let mut moved = scene.clone();
        moved.triangles[3][0][1] ^= 1;
        assert_ne!(base, print(&moved, &RenderOptions::default()));
    }
}
