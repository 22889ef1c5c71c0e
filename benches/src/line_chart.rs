//! Line charts side by side: panels sharing one x axis, a line per series in each (the network models' kbps and
//! delay against loss for `network-models`). Drawn like [`crate::chart`]: plotters' bitmap backend, the embedded
//! DejaVu Sans, encoded with `png`.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use crate::chart::{register_font, write_rgb_png, FONT};

const PANEL_WIDTH: u32 = 620;
const HEIGHT: u32 = 480;
/// One colour per series, in order (ColorBrewer Dark2, as the bar chart).
const COLOURS: [RGBColor; 6] = [
    RGBColor(0xd9, 0x5f, 0x02),
    RGBColor(0x1b, 0x9e, 0x77),
    RGBColor(0x75, 0x70, 0xb3),
    RGBColor(0xe7, 0x29, 0x8a),
    RGBColor(0x66, 0xa6, 0x1e),
    RGBColor(0xe6, 0xab, 0x02),
];

/// One line: its name and its points (x, y); a point whose run failed is left out. With `points_only` the points
/// are drawn without the line joining them (a scatter, for points whose order means nothing).
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub points_only: bool,
}

/// One panel: its title, its y axis, its lines.
#[derive(Clone, Debug)]
pub struct Panel {
    pub title: String,
    pub y_desc: String,
    pub series: Vec<Series>,
}

/// The width of a chart of `panels` panels.
pub fn width(panels: usize) -> u32 {
    PANEL_WIDTH * panels.max(1) as u32
}

/// Draws the panels side by side into an RGB buffer of [`width`] × 480.
pub fn render(panels: &[Panel], x_desc: &str) -> Result<Vec<u8>> {
    register_font();
    let w = width(panels.len());
    let mut buf = vec![0u8; (w * HEIGHT * 3) as usize];
    {
        let err = |e: &dyn std::fmt::Display| anyhow!("drawing the chart: {e}");
        let root = BitMapBackend::with_buffer(&mut buf, (w, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (panel, area) in panels.iter().zip(&areas) {
            let points = || panel.series.iter().flat_map(|s| s.points.iter().copied());
            let x_max = points().map(|p| p.0).fold(0.0, f64::max).max(1.0);
            let y_max = points().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
            let mut chart = ChartBuilder::on(area)
                .caption(&panel.title, (FONT, 20))
                .margin(16)
                .x_label_area_size(44)
                .y_label_area_size(64)
                .build_cartesian_2d(0.0..x_max, 0.0..y_max)
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(&panel.y_desc)
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 16))
                .draw()
                .map_err(|e| err(&e))?;
            for (s, &colour) in panel.series.iter().zip(COLOURS.iter().cycle()) {
                let style = ShapeStyle::from(colour).stroke_width(3);
                let line = if s.points_only { Vec::new() } else { s.points.clone() };
                chart
                    .draw_series(LineSeries::new(line, style))
                    .map_err(|e| err(&e))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], style));
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                    .map_err(|e| err(&e))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK)
                .label_font((FONT, 14))
                .draw()
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(buf)
}

/// Renders the panels and writes them as a PNG at `path`.
pub fn write_png(path: &Path, panels: &[Panel], x_desc: &str) -> Result<()> {
    let rgb = render(panels, x_desc)?;
    write_rgb_png(path, &rgb, width(panels.len()), HEIGHT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_render_lines_in_their_colours_and_text() {
        let line = |name: &str, k: f64| Series {
            name: name.into(),
            points: vec![(0.0, 10.0 * k), (5.0, 12.0 * k), (25.0, 20.0 * k)],
            points_only: false,
        };
        let panels = vec![
            Panel {
                title: "kbps".into(),
                y_desc: "kbps".into(),
                series: vec![line("lockstep", 1.0), line("snapshots", 3.0)],
            },
            Panel {
                title: "delay".into(),
                y_desc: "ms".into(),
                series: vec![line("lockstep", 10.0)],
            },
        ];
        let rgb = render(&panels, "loss (%)").unwrap();
        assert_eq!(rgb.len(), (width(2) * HEIGHT * 3) as usize);
        let has = |c: RGBColor| rgb.chunks_exact(3).any(|p| p == [c.0, c.1, c.2]);
        assert!(has(COLOURS[0]) && has(COLOURS[1]), "both series are drawn");
        assert!(!has(COLOURS[2]), "no third series");
        let grey = rgb
            .chunks_exact(3)
            .filter(|p| p[0] == p[1] && p[1] == p[2] && p[0] > 40 && p[0] < 200)
            .count();
        assert!(grey > 500, "text pixels: {grey}");
    }
}
