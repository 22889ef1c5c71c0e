//! The ms/step bar chart of `bench-report`: one group per scene, a bar per engine, log scale.
//!
//! Drawn with plotters' bitmap backend into an RGB buffer and encoded with `png`. Text goes through plotters'
//! `ab_glyph` feature with DejaVu Sans embedded by the `dejavu` crate, so no system font or fontconfig is needed.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters::style::FontStyle;

const WIDTH: u32 = 1100;
const HEIGHT: u32 = 620;
pub(crate) const FONT: &str = "sans-serif";
const TUMBLE_COLOR: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
const RAPIER_COLOR: RGBColor = RGBColor(0x1b, 0x9e, 0x77);

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // DejaVu Sans is a valid TrueType font; registering it cannot fail short of a broken crate.
        if plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_err() {
            eprintln!("warning: could not register the embedded font; chart text may be missing");
        }
    });
}

/// One scene's bars: its name and each engine's ms/step (None when that run failed or was not made).
#[derive(Clone, Debug)]
pub struct SceneBars {
    pub scene: String,
    pub tumble_ms: Option<f64>,
    pub rapier_ms: Option<f64>,
}

fn decade_below(x: f64) -> f64 {
    10f64.powf(x.log10().floor())
}

fn decade_above(x: f64) -> f64 {
    10f64.powf(x.log10().ceil())
}

/// A number with three significant digits and no trailing zeros: 54.1, 0.0747, 0.00036, 1, 0.01.
fn ms_label(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return format!("{v}");
    }
    let decimals = (2 - v.log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Draws the chart into an RGB buffer of `WIDTH × HEIGHT`.
pub fn render(bars: &[SceneBars], title: &str) -> Result<Vec<u8>> {
    register_font();
    let values: Vec<f64> = bars
        .iter()
        .flat_map(|b| [b.tumble_ms, b.rapier_ms])
        .flatten()
        .filter(|v| *v > 0.0 && v.is_finite())
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let (y_min, y_max) = if values.is_empty() {
        (0.001, 1.0)
    } else {
        (decade_below(lo * 0.9), decade_above(hi * 1.5))
    };
    let n = bars.len().max(1);
    let mut buf = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let err = |e: &dyn std::fmt::Display| anyhow!("drawing the chart: {e}");
        let root = BitMapBackend::with_buffer(&mut buf, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 24))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, (y_min..y_max).log_scale())
            .map_err(|e| err(&e))?;
        // Scene i is centred on x = i; ticks elsewhere (if plotters picks any) stay unlabelled.
        let scene_name = |x: &f64| {
            let i = x.round();
            if (x - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            bars.get(i as usize).map(|b| b.scene.clone()).unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_desc("scene")
            .y_desc("median ms per step (log scale)")
            .x_label_formatter(&scene_name)
            .y_label_formatter(&|y| ms_label(*y))
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 18))
            .draw()
            .map_err(|e| err(&e))?;
        for (engine, color, offset) in [("Tumble", TUMBLE_COLOR, -0.4), ("Rapier 0.36", RAPIER_COLOR, 0.02)] {
            let pick = |b: &SceneBars| if offset < 0.0 { b.tumble_ms } else { b.rapier_ms };
            let rects = bars.iter().enumerate().filter_map(|(i, b)| {
                let v = pick(b)?.max(y_min);
                let x0 = i as f64 + offset;
                Some(Rectangle::new([(x0, y_min), (x0 + 0.38, v)], color.filled()))
            });
            chart
                .draw_series(rects)
                .map_err(|e| err(&e))?
                .label(engine)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
            let labels = bars.iter().enumerate().filter_map(|(i, b)| {
                let v = pick(b)?;
                Some(Text::new(
                    ms_label(v),
                    (i as f64 + offset + 0.02, v.max(y_min) * 1.15),
                    (FONT, 13),
                ))
            });
            chart.draw_series(labels).map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, 16))
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(buf)
}

/// Renders the chart and writes it as a PNG at `path`.
pub fn write_png(path: &Path, bars: &[SceneBars], title: &str) -> Result<()> {
    let rgb = render(bars, title)?;
    write_rgb_png(path, &rgb, WIDTH, HEIGHT)
}

/// Writes an RGB buffer of `width × height` as a PNG at `path`.
pub(crate) fn write_rgb_png(path: &Path, rgb: &[u8], width: u32, height: u32) -> Result<()> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder
        .write_header()
        .with_context(|| format!("writing {}", path.display()))?;
    writer
        .write_image_data(rgb)
        .with_context(|| format!("writing {}", path.display()))?;
    writer.finish().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_renders_text_and_bars() {
        let bars = vec![
            SceneBars {
                scene: "tower30".into(),
                tumble_ms: Some(0.05),
                rapier_ms: Some(0.2),
            },
            SceneBars {
                scene: "field900".into(),
                tumble_ms: None,
                rapier_ms: Some(3.0),
            },
        ];
        let rgb = render(&bars, "test").unwrap();
        assert_eq!(rgb.len(), (WIDTH * HEIGHT * 3) as usize);
        let has = |c: RGBColor| rgb.chunks_exact(3).any(|p| p == [c.0, c.1, c.2]);
        assert!(has(TUMBLE_COLOR) && has(RAPIER_COLOR), "both engines' bars are drawn");
        // Text is drawn anti-aliased: grey pixels exist only if the font rendered.
        let grey = rgb
            .chunks_exact(3)
            .filter(|p| p[0] == p[1] && p[1] == p[2] && p[0] > 40 && p[0] < 200)
            .count();
        assert!(grey > 500, "text pixels: {grey}");
    }

    #[test]
    fn decades_bracket_values() {
        assert_eq!(decade_below(0.03), 0.01);
        assert_eq!(decade_above(0.03), 0.1);
        assert_eq!(decade_above(2.0), 10.0);
    }

    #[test]
    fn labels_keep_three_significant_digits() {
        assert_eq!(ms_label(54.0724), "54.1");
        assert_eq!(ms_label(0.07471), "0.0747");
        assert_eq!(ms_label(0.00036), "0.00036");
        assert_eq!(ms_label(1.0), "1");
        assert_eq!(ms_label(0.01), "0.01");
        assert_eq!(ms_label(1234.6), "1235");
    }
}
