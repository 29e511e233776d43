//! The picture as an SVG, with its text: the title, lane names (`worker N`,
//! `main thread`), the time axis in milliseconds and the legend of what
//! made each task ready. The text is SVG `<text>`: the viewer renders it,
//! so nothing here needs a font file.

use std::fmt::Write;

use crate::layout::{Picture, SWATCH};

const FONT: &str = "font-family=\"sans-serif\" font-size=\"12\"";

fn rgb((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// `text` with the characters XML gives a meaning escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

pub fn render(picture: &Picture) -> String {
    let (w, h) = (picture.width, picture.height);
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" {FONT}>"
    );
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>");
    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}</text>", crate::layout::MARGIN, crate::layout::MARGIN + 4, escape(&picture.title));
    for row in &picture.rows {
        let background = if row.worker { "#f0f0f0" } else { "#faf0e1" };
        let _ = writeln!(s, "<g>");
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
            picture.left - 8,
            (row.top + row.bottom) / 2,
            escape(&row.label)
        );
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{background}\"/>",
            picture.left,
            row.top,
            picture.right - picture.left,
            row.bottom - row.top
        );
        for span in &row.spans {
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                span.x0,
                row.top + 2,
                span.x1 - span.x0,
                row.bottom - row.top - 4,
                rgb(span.color)
            );
        }
        let _ = writeln!(s, "</g>");
    }
    let axis = picture.axis_y;
    let _ = writeln!(s, "<g stroke=\"#000000\">");
    let _ = writeln!(s, "<line x1=\"{}\" y1=\"{axis}\" x2=\"{}\" y2=\"{axis}\"/>", picture.left, picture.right);
    for tick in &picture.ticks {
        let _ = writeln!(s, "<line x1=\"{0}\" y1=\"{axis}\" x2=\"{0}\" y2=\"{1}\"/>", tick.x, axis + 6);
    }
    let _ = writeln!(s, "</g>");
    for tick in &picture.ticks {
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", tick.x, axis + 20, escape(&tick.label));
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444444\">{}</text>",
        (picture.left + picture.right) / 2,
        axis + 36,
        escape(&picture.axis_caption)
    );
    for entry in &picture.legend {
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{SWATCH}\" height=\"{SWATCH}\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>",
            entry.x,
            entry.y,
            rgb(entry.color),
            entry.x + SWATCH + 6,
            entry.y + SWATCH / 2,
            escape(&entry.text)
        );
    }
    s.push_str("</svg>\n");
    s
}

pub fn write(picture: &Picture, out: &str) -> Result<(), String> {
    std::fs::write(out, render(picture)).map_err(|e| format!("cannot write {out}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_what_xml_reserves() {
        assert_eq!(escape("a<b>&\"c\"\u{7}"), "a&lt;b&gt;&amp;&quot;c&quot;");
    }
}
