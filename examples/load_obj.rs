//! Loads an OBJ without rendering it and prints how long that took, the peak memory of the
//! process, and a SHA-256 of the scene (its words, notes and scale), so that two versions of
//! the loader can be compared on a large model.
//!
//!     cargo run --release --example load_obj MODEL.obj [WIDTH HEIGHT]
//!     cargo run --release --example load_obj -- --icosphere SUBDIVISIONS OUT.obj
//!
//! The second form writes the bumpy icosphere of the benchmarks (amplitude 0.08) as OBJ
//! text: subdivisions 8 give 1,310,720 triangles, about 50 MB.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};
use theia::io::scene::obj::{load_obj, ObjOptions};

/// The process's peak resident memory in kB (Linux), if it can be read.
fn peak_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

struct HashWriter(Sha256);

impl std::fmt::Write for HashWriter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.update(s.as_bytes());
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--icosphere") {
        let subdivisions: u32 = args.get(1).ok_or("subdivisions?")?.parse()?;
        let out = PathBuf::from(args.get(2).ok_or("output file?")?);
        let text = theia::io::scene::generate::displaced_icosphere_obj(subdivisions, 0.08);
        std::fs::write(&out, &text)?;
        println!("{}: {} bytes", out.display(), text.len());
        return Ok(());
    }
    let model = PathBuf::from(args.first().ok_or("usage: load_obj MODEL.obj [W H]")?);
    let size = |i: usize| args.get(i).map_or(Ok(256), |s| s.parse::<u32>());
    let options = ObjOptions {
        width: size(1)?,
        height: size(2)?,
        ..ObjOptions::default()
    };
    let before = peak_kb();
    let start = Instant::now();
    let loaded = load_obj(&model, &options)?;
    let seconds = start.elapsed().as_secs_f64();
    let peak = peak_kb();
    let triangles = loaded.scene.triangles.len();
    for note in &loaded.notes {
        eprintln!("{note}");
    }
    // Hashed as it is formatted: the text of a large scene is hundreds of megabytes.
    let mut hasher = HashWriter(Sha256::new());
    write!(hasher, "{loaded:?}")?;
    let digest: String = (hasher.0.finalize().iter())
        .map(|b| format!("{b:02x}"))
        .collect();
    println!(
        "{}: {triangles} triangles loaded in {seconds:.3} s ({:.2} us per triangle)",
        model.display(),
        seconds * 1e6 / triangles.max(1) as f64
    );
    if let (Some(before), Some(peak)) = (before, peak) {
        println!(
            "peak resident memory {:.1} MB ({:.1} MB before loading; {:.0} bytes per triangle in all)",
            peak as f64 / 1024.0,
            before as f64 / 1024.0,
            peak as f64 * 1024.0 / triangles.max(1) as f64
        );
    }
    println!("scene sha256 {digest}");
    Ok(())
}
