//! How the hardware's frame time scales with its cores (`theia bench --hardware`): the
//! same scene split into 1, 2, 4, 8 and 16 row bands, each timed as an RTL built with
//! that many cores (`MAX_CORES`) would take it, and a plot of the speed-up as SVG.

use super::{measure, Timing, TimingError, TimingOptions};
use crate::emu::machine::{Machine, RenderOptions};
use crate::io::scene::{Partition, Scene};

/// The core counts `theia bench --hardware` times.
pub const CORE_COUNTS: [u32; 5] = [1, 2, 4, 8, 16];

/// One core count's frame.
#[derive(Clone, Debug)]
pub struct HardwareRow {
    pub cores: u32,
    /// `None` when the frame never ends (unequal bands deadlock the host, or a hazard).
    pub frame_cycles: Option<u64>,
    /// Whether every band has as many pixels (the hardware needs it).
    pub equal_bands: bool,
    /// Of all cores' cycles, the share spent busy (not waiting for the host or the other
    /// cores, not done).
    pub busy_share: f64,
    pub hazards: usize,
}

impl HardwareRow {
    fn new(cores: u32, equal_bands: bool, timing: &Timing) -> HardwareRow {
        let (busy, all) = timing.course.cores.iter().fold((0, 0), |(b, a), core| {
            let p = core.periods;
            (b + p.busy, a + p.busy + p.waiting + p.idle)
        });
        HardwareRow {
            cores,
            frame_cycles: timing.frame_cycles(),
            equal_bands,
            busy_share: busy as f64 / all.max(1) as f64,
            hazards: timing.hazards().len(),
        }
    }

    /// The frame's speed-up over `one` core's, when both end.
    pub fn speedup(&self, one: &HardwareRow) -> Option<f64> {
        Some(one.frame_cycles? as f64 / self.frame_cycles? as f64)
    }
}

/// `scene` rendered with `options` split into each of `counts` row bands, timed.
pub fn table(
    scene: &Scene,
    options: &RenderOptions,
    timing: &TimingOptions,
    counts: &[u32],
) -> Result<Vec<HardwareRow>, TimingError> {
    counts
        .iter()
        .map(|&cores| {
            let options = RenderOptions {
                cores: Some(cores),
                band: None,
                ..options.clone()
            };
            let machine =
                Machine::new(scene, &options).map_err(|e| TimingError::Fault(e.to_string()))?;
            let bands = Partition::bands(scene.width(), scene.height(), cores);
            let equal = bands
                .iter()
                .all(|b| b.pixel_count() == bands[0].pixel_count());
            Ok(HardwareRow::new(cores, equal, &measure(&machine, timing)?))
        })
        .collect()
}

/// A bar chart of the speed-up over one core (and the ideal, one per core) as SVG.
pub fn svg(rows: &[HardwareRow], title: &str) -> String {
    const WIDTH: f64 = 560.0;
    const BAR: f64 = 34.0;
    const LEFT: f64 = 70.0;
    const TOP: f64 = 50.0;
    let one = rows.iter().find(|r| r.cores == 1);
    let speedups: Vec<Option<f64>> = rows
        .iter()
        .map(|r| one.and_then(|one| r.speedup(one)))
        .collect();
    let most = rows
        .iter()
        .map(|r| f64::from(r.cores))
        .chain(speedups.iter().flatten().copied())
        .fold(1.0, f64::max);
    let scale = (WIDTH - LEFT - 90.0) / most;
    let height = TOP + rows.len() as f64 * (BAR + 12.0) + 40.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"24\" font-size=\"15\">{}</text>\n\
         <text x=\"{LEFT}\" y=\"40\" fill=\"#555\">speed-up of the frame over one core (grey: ideal)</text>\n",
        escape(title)
    );
    for (i, (row, speedup)) in rows.iter().zip(&speedups).enumerate() {
        let y = TOP + i as f64 * (BAR + 12.0);
        let ideal = f64::from(row.cores) * scale;
        out.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{} {}</text>\n\
             <rect x=\"{LEFT}\" y=\"{y}\" width=\"{ideal:.1}\" height=\"{BAR}\" fill=\"#ddd\"/>\n",
            LEFT - 8.0,
            y + BAR * 0.65,
            row.cores,
            if row.cores == 1 { "core" } else { "cores" }
        ));
        let label = match speedup {
            Some(s) => {
                out.push_str(&format!(
                    "<rect x=\"{LEFT}\" y=\"{}\" width=\"{:.1}\" height=\"{}\" fill=\"#3b6fb6\"/>\n",
                    y + 6.0,
                    s * scale,
                    BAR - 12.0
                ));
                format!("{s:.2}x")
            }
            None => "never ends".to_string(),
        };
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{}\">{label}</text>\n",
            LEFT + ideal.max(speedup.unwrap_or(0.0) * scale) + 6.0,
            y + BAR * 0.65
        ));
    }
    out.push_str("</svg>\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cores: u32, frame: Option<u64>) -> HardwareRow {
        HardwareRow {
            cores,
            frame_cycles: frame,
            equal_bands: true,
            busy_share: 1.0,
            hazards: 0,
        }
    }

    #[test]
    fn the_plot_draws_one_bar_per_core_count() {
        let rows = [row(1, Some(800)), row(2, Some(400)), row(4, None)];
        let svg = svg(&rows, "a <scene>");
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("a &lt;scene&gt;"));
        assert!(svg.contains(">2.00x<"));
        assert!(svg.contains(">never ends<"));
        assert_eq!(svg.matches("fill=\"#3b6fb6\"").count(), 2);
        assert_eq!(rows[1].speedup(&rows[0]), Some(2.0));
    }
}
