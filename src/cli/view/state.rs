//! What the viewer knows: the last good frame (with the scene and options that made it, for
//! traces), the last failed attempt, the pages listening for pushes, and the thread that
//! renders again on every change.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::anyhow;
use bytes::Bytes;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{Receiver, Sender};

use super::json;
use super::starter::Starter;
use crate::cli::cycles::CyclesArgs;
use crate::cli::error_message;
use crate::cli::scene_args::SceneArgs;
use crate::cli::shader::{Shader, ShaderArgs};
use theia::emu::isa::asm::{assemble, AsmErrors};
use theia::emu::machine::ssaa::Supersampler;
use theia::emu::machine::{Render, RenderError, RenderOptions};
use theia::emu::timing::{self, Timing};
use theia::io::image::{compare, marked_difference_image, png_bytes, Rgb8};
use theia::io::scene::{Partition, Scene};
use theia::tools::inspect::{differences, Difference};
use theia::tools::trace::{trace_pixel, SourceMap, TraceOptions};
use theia::tools::viewer::Setting;

/// Events a page's queue holds before newer ones are dropped (a page that stops reading
/// must not make the server hoard memory); a page catches up from `/state` anyway.
pub const EVENT_QUEUE: usize = 64;
/// Pages listening at once: tabs, and tools following the frame; the limit only keeps a
/// runaway client from hoarding queues.
pub const MAX_SUBSCRIBERS: usize = 64;
/// How often a render in flight reports its progress.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// What one frame was rendered from.
pub struct Inputs {
    pub scene: Scene,
    pub options: RenderOptions,
    /// The THEIA shader's source lines, for traces.
    pub source: Option<SourceMap>,
    /// What the scene loader said (resampled textures, faces behind the camera).
    pub notes: Vec<String>,
}

/// A good frame.
pub struct Rendered {
    pub generation: u64,
    pub inputs: Inputs,
    pub render: Render,
    pub png: Bytes,
}

/// Why the last attempt failed; the last good frame stays on show.
pub struct Failure {
    pub generation: u64,
    pub message: String,
    /// Assembler errors in the shader: (line, column, message), 1-based.
    pub lines: Vec<(usize, usize, String)>,
}

/// Two renders of the current scene side by side.
pub struct SideBySide {
    pub a_png: Bytes,
    pub b_png: Bytes,
    pub diff_png: Bytes,
    pub json: String,
}

struct Progress {
    requested: u64,
    rendering: Option<u64>,
    good: Option<Arc<Rendered>>,
    failure: Option<Arc<Failure>>,
    stop: bool,
}

pub struct Viewer {
    pub scene: SceneArgs,
    /// `--ssaa`: samples per pixel along each side.
    ssaa: u32,
    /// `--shader`, or the file the starter was first saved to; no file while the starter
    /// runs from memory.
    shader: Mutex<ShaderArgs>,
    /// The shader in memory while there is no file (`theia view` without `--shader`), made
    /// from the first scene that loads.
    starter: Mutex<Option<Starter>>,
    /// The file watcher, to which a first save adds the new file's directory.
    pub watcher: Mutex<Option<notify::RecommendedWatcher>>,
    progress: Mutex<Progress>,
    wake: Condvar,
    subscribers: Mutex<Vec<Sender<String>>>,
    comparison: Mutex<Option<Arc<SideBySide>>>,
    /// One comparison at a time, so the images kept match the answer just given.
    comparing: Mutex<()>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicked request thread leaves consistent data behind (every update is one
    // assignment), so a poisoned lock is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Viewer {
    pub fn new(scene: SceneArgs, shader: ShaderArgs, ssaa: u32) -> Viewer {
        Viewer {
            scene,
            ssaa,
            shader: Mutex::new(shader),
            starter: Mutex::new(None),
            watcher: Mutex::new(None),
            progress: Mutex::new(Progress {
                requested: 1,
                rendering: None,
                good: None,
                failure: None,
                stop: false,
            }),
            wake: Condvar::new(),
            subscribers: Mutex::new(Vec::new()),
            comparison: Mutex::new(None),
            comparing: Mutex::new(()),
        }
    }

    /// The shader file, if there is one yet.
    pub fn shader_file(&self) -> Option<PathBuf> {
        lock(&self.shader).shader.clone()
    }

    /// The starter, while there is no shader file: `None` until the render loop has loaded
    /// the scene (it is made from the scene's program, and a second load here would double
    /// the work for a large model). A scene that does not load gives the pass-through
    /// program, not kept, with the reason at the top.
    pub fn starter(&self) -> Option<Starter> {
        if self.shader_file().is_some() {
            return None;
        }
        if let Some(starter) = lock(&self.starter).clone() {
            return Some(starter);
        }
        let failure = lock(&self.progress).failure.clone()?;
        Some(Starter::passthrough(&format!(
            "the scene did not load: {}",
            failure.message
        )))
    }

    /// The starter kept for the viewer's life, made from `scene` if there is none yet.
    fn starter_for(&self, scene: &Scene) -> Starter {
        lock(&self.starter)
            .get_or_insert_with(|| Starter::for_program(scene.program.as_deref(), &scene.name))
            .clone()
    }

    /// Where the starter came from, for the page (without making it).
    fn starter_origin(&self) -> Option<String> {
        if self.shader_file().is_some() {
            return None;
        }
        lock(&self.starter).as_ref().map(|s| s.origin.clone())
    }

    /// Makes `path` the shader file (the starter's first save) and renders it.
    pub fn adopt_shader_file(&self, path: &Path) {
        lock(&self.shader).shader = Some(path.to_path_buf());
        self.request_render();
    }

    /// Asks for a new render; a render in flight is superseded (its frame is dropped).
    pub fn request_render(&self) {
        lock(&self.progress).requested += 1;
        self.wake.notify_all();
    }

    pub fn stop(&self) {
        lock(&self.progress).stop = true;
        self.wake.notify_all();
        lock(&self.subscribers).clear();
    }

    pub fn latest(&self) -> Option<Arc<Rendered>> {
        lock(&self.progress).good.clone()
    }

    pub fn comparison(&self) -> Option<Arc<SideBySide>> {
        lock(&self.comparison).clone()
    }

    /// A new page's event queue, or `None` when too many pages listen.
    pub fn subscribe(&self) -> Option<Receiver<String>> {
        let mut subscribers = lock(&self.subscribers);
        subscribers.retain(|s| !s.is_closed());
        if subscribers.len() >= MAX_SUBSCRIBERS {
            return None;
        }
        let (sender, receiver) = tokio::sync::mpsc::channel(EVENT_QUEUE);
        subscribers.push(sender);
        Some(receiver)
    }

    /// Sends a server-sent event to every page; a full queue drops it for that page.
    fn broadcast(&self, event: &str, data: &str) {
        let message = format!("event: {event}\ndata: {data}\n\n");
        lock(&self.subscribers).retain(|subscriber| {
            !matches!(
                subscriber.try_send(message.clone()),
                Err(TrySendError::Closed(_))
            )
        });
    }

    /// Renders whenever asked, until [`Viewer::stop`].
    pub fn render_loop(&self) {
        let mut done = 0;
        loop {
            let generation = {
                let mut progress = lock(&self.progress);
                while progress.requested == done && !progress.stop {
                    progress = self
                        .wake
                        .wait(progress)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
                if progress.stop {
                    return;
                }
                progress.rendering = Some(progress.requested);
                progress.requested
            };
            done = generation;
            self.broadcast("state", &self.state_json());
            let outcome = self.render(generation);
            {
                let mut progress = lock(&self.progress);
                progress.rendering = None;
                match outcome {
                    Ok(Some(rendered)) => {
                        progress.good = Some(Arc::new(rendered));
                        progress.failure = None;
                    }
                    Ok(None) => {} // superseded: the next request renders at once
                    Err(failure) => progress.failure = Some(Arc::new(failure)),
                }
            }
            self.broadcast("state", &self.state_json());
        }
    }

    /// Loads the scene and shader as they are now and renders them; `Ok(None)` when a newer
    /// request arrived meanwhile (the render in flight is cancelled then).
    fn render(&self, generation: u64) -> Result<Option<Rendered>, Failure> {
        let failure = |error: anyhow::Error| Failure::from_error(generation, &error);
        let inputs = self.load().map_err(failure)?;
        let cancel = Arc::new(AtomicBool::new(false));
        let options = RenderOptions {
            cancel: Some(cancel.clone()),
            ..inputs.options.clone()
        };
        let sampler =
            Supersampler::new(&inputs.scene, &options).map_err(|e| failure(anyhow!(e)))?;
        let total = sampler.total_samples();
        let done = AtomicU64::new(0);
        let result = std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                crate::cli::test_hooks::hold("render");
                sampler.render(Some(&done), |_| Ok(()))
            });
            while !worker.is_finished() {
                std::thread::sleep(PROGRESS_EVERY);
                if self.superseded(generation) {
                    cancel.store(true, Ordering::Relaxed);
                }
                let data = json::object(&[
                    ("generation", generation.to_string()),
                    ("done", done.load(Ordering::Relaxed).to_string()),
                    ("total", total.to_string()),
                ]);
                self.broadcast("progress", &data);
            }
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        drop(sampler);
        let render = match result {
            Err(RenderError::Cancelled) => return Ok(None),
            other => other.map_err(|e| failure(anyhow!(e)))?,
        };
        if self.superseded(generation) {
            return Ok(None);
        }
        let png = Bytes::from(png_bytes(&Rgb8::from_frame(&render.frame)));
        Ok(Some(Rendered {
            generation,
            inputs,
            render,
            png,
        }))
    }

    fn superseded(&self, generation: u64) -> bool {
        lock(&self.progress).requested != generation
    }

    fn load(&self) -> anyhow::Result<Inputs> {
        let loaded = self.scene.load_frame(None, self.ssaa, false)?;
        let args = lock(&self.shader).clone();
        let shader = match &args.shader {
            None => {
                let starter = self.starter_for(&loaded.scene);
                let assembly = assemble(&starter.source, Path::new(&starter.origin))?;
                Some(Shader::Theia {
                    imem: assembly.imem,
                    source: SourceMap {
                        file: starter.origin.clone(),
                        lines: assembly.lines,
                    },
                })
            }
            _ => args.load(true)?,
        };
        let options = RenderOptions {
            ssaa: self.ssaa,
            ..self.scene.render_options(shader.as_ref())?
        };
        let source = match shader {
            Some(Shader::Theia { source, .. }) => Some(source),
            _ => None,
        };
        Ok(Inputs {
            scene: loaded.scene,
            options,
            source,
            notes: loaded.notes,
        })
    }

    /// Everything a page shows but the images, as JSON.
    pub fn state_json(&self) -> String {
        let (requested, rendering, good, failure) = {
            let progress = lock(&self.progress);
            (
                progress.requested,
                progress.rendering,
                progress.good.clone(),
                progress.failure.clone(),
            )
        };
        let scene = match &self.scene.scene {
            Some(path) => path.display().to_string(),
            None => "built-in scene".into(),
        };
        json::object(&[
            ("requested", requested.to_string()),
            ("rendering", json::or_null(rendering.map(|g| g.to_string()))),
            ("scene", json::string(&scene)),
            (
                "shader",
                json::or_null(
                    self.shader_file()
                        .map(|p| json::string(&p.display().to_string())),
                ),
            ),
            (
                "starter",
                json::or_null(self.starter_origin().map(|s| json::string(&s))),
            ),
            ("frame", json::or_null(good.map(|g| g.json()))),
            ("error", json::or_null(failure.map(|f| f.json()))),
        ])
    }

    /// `theia trace`'s text for a pixel of the frame on show.
    pub fn trace(&self, x: u32, y: u32) -> anyhow::Result<String> {
        let rendered = self.latest().ok_or_else(|| anyhow!("no frame yet"))?;
        let inputs = &rendered.inputs;
        // With supersampling, the pixel's first (top-left) sample.
        let sampler = Supersampler::new(&inputs.scene, &inputs.options)?;
        let machine = sampler.machine()?;
        let options = TraceOptions {
            source: inputs.source.clone(),
            ..TraceOptions::default()
        };
        let mut text = Vec::new();
        let k = sampler.factor();
        let trace = trace_pixel(&machine, x * k, y * k, &options, &mut text)?;
        let mut text = String::from_utf8_lossy(&text).into_owned();
        if let Some(fault) = trace.fault {
            text.push_str(&format!("error: {fault}\n"));
        }
        Ok(text)
    }

    /// Renders the frame on show's scene with two settings and keeps the images.
    pub fn compare(&self, a: Setting, b: Setting) -> anyhow::Result<Arc<SideBySide>> {
        let _one_at_a_time = lock(&self.comparing);
        let rendered = self.latest().ok_or_else(|| anyhow!("no frame yet"))?;
        let inputs = &rendered.inputs;
        // Each side's image, and how long the hardware takes for it (`--cycles`: frame
        // cycles, each core's busy, waiting and idle cycles; null for a foreign stage).
        let render = |setting: Setting| -> anyhow::Result<(Render, String)> {
            let options = RenderOptions {
                cores: setting.cores.or(inputs.options.cores),
                rom: setting.rom,
                ..inputs.options.clone()
            };
            let sampler = Supersampler::new(&inputs.scene, &options)?;
            let machine = sampler.machine()?;
            // As `theia render --cycles` times it, with the default (fixed) host.
            let timing_options = CyclesArgs::default().options(sampler.samples(), &options, None);
            let cycles = timing::measure(&machine, &timing_options)
                .map_or_else(|_| "null".to_string(), |timing| cycles_json(&timing));
            let render = match sampler.factor() {
                1 => machine.render(None)?,
                _ => sampler.render(None, |_| Ok::<_, RenderError>(()))?,
            };
            Ok((render, cycles))
        };
        let ((ra, cycles_a), (rb, cycles_b)) = (render(a)?, render(b)?);
        let (ia, ib) = (Rgb8::from_frame(&ra.frame), Rgb8::from_frame(&rb.frame));
        let result = compare(&ia, &ib).map_err(|e| anyhow!(e))?;
        let found = differences(&result, &ra.frame.partitions, &rb.frame.partitions);
        let first_of_partition =
            first_pixels_differing(&ia, &ib, &ra.frame.partitions, &rb.frame.partitions);
        let side = |setting: Setting, render: &Render, cycles: String| {
            json::object(&[
                ("cores", render.cores.to_string()),
                ("rom", json::string(setting.rom.name())),
                ("cycles", cycles),
            ])
        };
        let json = json::object(&[
            ("generation", rendered.generation.to_string()),
            ("width", result.width.to_string()),
            ("height", result.height.to_string()),
            ("a", side(a, &ra, cycles_a)),
            ("b", side(b, &rb, cycles_b)),
            ("count", result.differing_pixels.to_string()),
            ("first_of_partition", first_of_partition.to_string()),
            (
                "max_channel_difference",
                result.max_channel_difference.to_string(),
            ),
            (
                "differences",
                json::array(found.iter().take(MAX_LISTED).map(difference_json)),
            ),
        ]);
        let comparison = Arc::new(SideBySide {
            a_png: png_bytes(&ia).into(),
            b_png: png_bytes(&ib).into(),
            diff_png: png_bytes(&marked_difference_image(&ia, &ib)).into(),
            json,
        });
        *lock(&self.comparison) = Some(comparison.clone());
        Ok(comparison)
    }
}

/// A timed frame as the compare panel draws it: `{"frame": N or null, "cores": [[busy,
/// waiting, idle], ...]}`.
fn cycles_json(timing: &Timing) -> String {
    let cores = timing.course.cores.iter().map(|core| {
        let p = core.periods;
        format!("[{},{},{}]", p.busy, p.waiting, p.idle)
    });
    json::object(&[
        (
            "frame",
            json::or_null(timing.frame_cycles().map(|c| c.to_string())),
        ),
        ("cores", json::array(cores)),
    ])
}

/// Differing pixels a compare answer lists (the count covers all).
const MAX_LISTED: usize = theia::io::image::KEPT_DIFFERENCES;

/// How many pixels that start a partition of either render differ (counted over the
/// partitions, not the differences, which are kept only up to [`MAX_LISTED`]).
fn first_pixels_differing(a: &Rgb8, b: &Rgb8, pa: &[Partition], pb: &[Partition]) -> usize {
    let mut starts: Vec<(u32, u32)> = pa.iter().chain(pb).map(Partition::start_pixel).collect();
    starts.sort_unstable();
    starts.dedup();
    starts
        .into_iter()
        .filter(|&(x, y)| x < a.width && y < a.height && a.pixel(x, y) != b.pixel(x, y))
        .count()
}

fn difference_json(difference: &Difference) -> String {
    let core = |location: Option<theia::tools::trace::PixelLocation>| {
        json::or_null(location.map(|l| l.core.to_string()))
    };
    json::object(&[
        ("x", difference.x.to_string()),
        ("y", difference.y.to_string()),
        ("core_a", core(difference.a)),
        ("core_b", core(difference.b)),
        ("first", difference.first_of_partition().to_string()),
    ])
}

impl Rendered {
    fn json(&self) -> String {
        let render = &self.render;
        let culling = match (&render.culling_refused, render.culled) {
            (Some(refusal), _) => format!("off: {refusal}"),
            (None, culled) => format!("{culled} triangle tests culled"),
        };
        json::object(&[
            ("generation", self.generation.to_string()),
            ("width", render.frame.width.to_string()),
            ("height", render.frame.height.to_string()),
            ("cores", render.cores.to_string()),
            ("lockstep_groups", render.lockstep_groups.to_string()),
            ("triangles", render.triangles.to_string()),
            (
                "instructions",
                if render.instructions_exact {
                    render.instructions.to_string()
                } else {
                    "null".to_string()
                },
            ),
            ("culling", json::string(&culling)),
            ("rom", json::string(self.inputs.options.rom.name())),
            (
                "notes",
                json::array(self.inputs.notes.iter().map(|n| json::string(n))),
            ),
            (
                "milliseconds",
                format!("{:.1}", render.elapsed.as_secs_f64() * 1e3),
            ),
        ])
    }
}

impl Failure {
    fn from_error(generation: u64, error: &anyhow::Error) -> Failure {
        let lines = error
            .downcast_ref::<AsmErrors>()
            .map(|errors| {
                errors
                    .errors
                    .iter()
                    .map(|d| (d.line, d.column, d.message.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let message = match error.downcast_ref::<AsmErrors>() {
            Some(errors) => errors.to_string(),
            None => error_message(error),
        };
        Failure {
            generation,
            message,
            lines,
        }
    }

    fn json(&self) -> String {
        let lines = self.lines.iter().map(|(line, column, message)| {
            json::object(&[
                ("line", line.to_string()),
                ("column", column.to_string()),
                ("message", json::string(message)),
            ])
        });
        json::object(&[
            ("generation", self.generation.to_string()),
            ("message", json::string(&self.message)),
            ("lines", json::array(lines)),
        ])
    }
}
