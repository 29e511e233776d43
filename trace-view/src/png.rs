//! The picture as a PNG, without text (the bitmap backend has no font
//! dependency): lanes, bars, the axis and its ticks, the legend's swatches.
//! The SVG ([`crate::svg`]) is the same picture with its labels.

use plotters::prelude::*;

use crate::layout::{Picture, SWATCH};

const WORKER_BACKGROUND: RGBColor = RGBColor(240, 240, 240);
const OTHER_BACKGROUND: RGBColor = RGBColor(250, 240, 225);

pub fn write(picture: &Picture, out: &str) -> Result<(), String> {
    let root = BitMapBackend::new(out, (picture.width as u32, picture.height as u32)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw {out}: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    for row in &picture.rows {
        let background = if row.worker { WORKER_BACKGROUND } else { OTHER_BACKGROUND };
        root.draw(&Rectangle::new([(picture.left, row.top), (picture.right, row.bottom)], background.filled()))
            .map_err(err)?;
        for span in &row.spans {
            let (r, g, b) = span.color;
            root.draw(&Rectangle::new([(span.x0, row.top + 2), (span.x1, row.bottom - 2)], RGBColor(r, g, b).filled()))
                .map_err(err)?;
        }
    }
    let axis = picture.axis_y;
    root.draw(&PathElement::new(vec![(picture.left, axis), (picture.right, axis)], BLACK)).map_err(err)?;
    for tick in &picture.ticks {
        root.draw(&PathElement::new(vec![(tick.x, axis), (tick.x, axis + 6)], BLACK)).map_err(err)?;
    }
    for entry in &picture.legend {
        let (r, g, b) = entry.color;
        root.draw(&Rectangle::new([(entry.x, entry.y), (entry.x + SWATCH, entry.y + SWATCH)], RGBColor(r, g, b).filled()))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
