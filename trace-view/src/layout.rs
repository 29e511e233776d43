//! The picture, in pixels, shared by both outputs: the PNG draws its
//! shapes, the SVG its shapes and text.
//!
//! Bars become spans of whole pixel columns: within a lane, each column
//! takes the colour of the last bar that covers it (every bar covers at
//! least one column, so every task is visible), and runs of columns of one
//! colour merge into one span. A lane thus has at most one span per column,
//! whatever the number of tasks (a 200,000-task trace stays a small SVG).
//! Consecutive bars of a lane alternate between a dark and a light shade,
//! so that back-to-back tasks stay distinguishable.

use crate::trace::{Kind, Lane};

pub type Rgb = (u8, u8, u8);

pub const LABEL_WIDTH: i32 = 120;
pub const MARGIN: i32 = 20;
pub const TITLE_HEIGHT: i32 = 28;
pub const LANE_HEIGHT: i32 = 36;
pub const LANE_GAP: i32 = 8;
/// Axis line, tick marks, tick labels and the axis caption.
pub const AXIS_HEIGHT: i32 = 44;
pub const LEGEND_ROW: i32 = 20;
pub const SWATCH: i32 = 12;

pub struct Span {
    pub x0: i32,
    pub x1: i32,
    pub color: Rgb,
}

pub struct Row {
    pub label: String,
    pub worker: bool,
    pub top: i32,
    pub bottom: i32,
    pub spans: Vec<Span>,
}

pub struct Tick {
    pub x: i32,
    pub label: String,
}

pub struct LegendEntry {
    pub x: i32,
    pub y: i32,
    pub color: Rgb,
    pub text: String,
}

pub struct Picture {
    pub width: i32,
    pub height: i32,
    pub title: String,
    /// The plot area's horizontal extent (bars and axis).
    pub left: i32,
    pub right: i32,
    pub rows: Vec<Row>,
    pub axis_y: i32,
    pub ticks: Vec<Tick>,
    pub axis_caption: String,
    pub legend: Vec<LegendEntry>,
}

pub fn lighter((r, g, b): Rgb) -> Rgb {
    let up = |c: u8| c + (255 - c) / 3;
    (up(r), up(g), up(b))
}

/// A tick step of 1, 2 or 5 times a power of ten, for about eight ticks
/// over `span`.
pub fn tick_step(span: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / 8.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|step| *step >= raw * 0.999).unwrap_or(10.0 * magnitude)
}

/// `value` with as many decimals as `step` needs.
pub fn tick_label(value: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{value:.decimals$} ms")
}

pub fn layout(title: &str, lanes: &[Lane], width: u32) -> Picture {
    let width = width as i32;
    let (left, right) = (MARGIN + LABEL_WIDTH, width - MARGIN);
    let all = lanes.iter().flat_map(|l| l.bars.iter());
    let t0 = all.clone().map(|b| b.start).fold(f64::INFINITY, f64::min);
    let t1 = all.map(|b| b.end).fold(f64::NEG_INFINITY, f64::max);
    let span = if t1 > t0 { t1 - t0 } else { 1.0 };
    let columns = (right - left).max(1);
    let x_of = |t: f64| left + ((t - t0) / span * columns as f64).floor().clamp(0.0, columns as f64) as i32;

    let mut rows = Vec::with_capacity(lanes.len());
    let mut counts = [0usize; Kind::ALL.len()];
    for (index, lane) in lanes.iter().enumerate() {
        let top = MARGIN + TITLE_HEIGHT + index as i32 * (LANE_HEIGHT + LANE_GAP);
        let mut column: Vec<Option<Rgb>> = vec![None; columns as usize];
        for (n, bar) in lane.bars.iter().enumerate() {
            counts[Kind::ALL.iter().position(|k| *k == bar.kind).unwrap_or(0)] += 1;
            let color = if n % 2 == 0 { bar.kind.color() } else { lighter(bar.kind.color()) };
            let x0 = (x_of(bar.start) - left).min(columns - 1);
            let x1 = (x_of(bar.end) - left).max(x0 + 1).min(columns);
            for c in &mut column[x0 as usize..x1 as usize] {
                *c = Some(color);
            }
        }
        let mut spans: Vec<Span> = Vec::new();
        for (c, color) in column.iter().enumerate() {
            let Some(color) = *color else { continue };
            let x = left + c as i32;
            match spans.last_mut() {
                Some(last) if last.x1 == x && last.color == color => last.x1 = x + 1,
                _ => spans.push(Span { x0: x, x1: x + 1, color }),
            }
        }
        rows.push(Row { label: lane.label(), worker: lane.is_worker(), top, bottom: top + LANE_HEIGHT, spans });
    }

    let axis_y = MARGIN + TITLE_HEIGHT + lanes.len().max(1) as i32 * (LANE_HEIGHT + LANE_GAP);
    let span_ms = span / 1000.0;
    let step = tick_step(span_ms);
    let ticks = (0..)
        .map(|k| k as f64 * step)
        .take_while(|ms| *ms <= span_ms * 1.000_001)
        .map(|ms| Tick { x: x_of(t0 + ms * 1000.0), label: tick_label(ms, step) })
        .collect();

    let legend_top = axis_y + AXIS_HEIGHT;
    let per_row = ((right - MARGIN) / 260).max(1) as usize;
    let legend: Vec<LegendEntry> = Kind::ALL
        .iter()
        .zip(counts)
        .enumerate()
        .map(|(i, (kind, count))| LegendEntry {
            x: MARGIN + (i % per_row) as i32 * 260,
            y: legend_top + (i / per_row) as i32 * LEGEND_ROW,
            color: kind.color(),
            text: format!("{} ({})", kind.label(), thousands(count)),
        })
        .collect();
    let legend_rows = Kind::ALL.len().div_ceil(per_row) as i32;
    Picture {
        width,
        height: legend_top + legend_rows * LEGEND_ROW + MARGIN,
        title: title.to_string(),
        left,
        right,
        rows,
        axis_y,
        ticks,
        axis_caption: format!("time since the first event (ms); span {:.3} ms", span_ms),
        legend,
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Bar;

    #[test]
    fn tick_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(10.0), 2.0);
        assert_eq!(tick_step(8.0), 1.0);
        assert_eq!(tick_step(35.0), 5.0);
        assert!((tick_step(0.015) - 0.002).abs() < 1e-12);
        assert_eq!(tick_label(4.0, 2.0), "4 ms");
        assert_eq!(tick_label(0.004, 0.002), "0.004 ms");
        assert_eq!(tick_label(1.5, 0.5), "1.5 ms");
    }

    #[test]
    fn many_bars_merge_into_at_most_one_span_per_column() {
        let bars = (0..100_000)
            .map(|i| Bar { start: i as f64, end: i as f64 + 0.5, kind: Kind::Execute })
            .collect();
        let lanes = [Lane { thread: "mlir-async-0".into(), bars }];
        let picture = layout("t", &lanes, 600);
        let spans = &picture.rows[0].spans;
        assert!(spans.len() <= (picture.right - picture.left) as usize);
        assert!(spans.windows(2).all(|w| w[0].x1 <= w[1].x0));
        assert_eq!(spans.first().unwrap().x0, picture.left);
        assert_eq!(picture.rows[0].label, "worker 0");
        assert!(picture.legend[0].text.ends_with("(100,000)"));
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
