//! SVG plots for the HTML report, drawn with plotters' SVG backend (no fonts or files needed;
//! text is SVG `<text>`): a histogram, horizontal bars per named row, and observed vs expected
//! bars per category.

use plotters::prelude::*;

/// Plot size in pixels.
const WIDTH: u32 = 720;

/// One bar color per series, in order.
const COLORS: [RGBColor; 2] = [RGBColor(54, 110, 185), RGBColor(230, 140, 50)];

/// A histogram of `samples` (ms) in 20 bins, titled `title`. Empty samples give no plot.
pub fn histogram(title: &str, x_desc: &str, samples: &[f64]) -> Option<String> {
    if samples.is_empty() {
        return None;
    }
    let max = samples.iter().copied().fold(0.0_f64, f64::max).max(0.001);
    let bins = 20_usize;
    let width = max / bins as f64;
    let mut counts = vec![0_u32; bins];
    for s in samples {
        let i = ((s / width) as usize).min(bins - 1);
        counts[i] += 1;
    }
    let top = f64::from(counts.iter().copied().max().unwrap_or(1));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 300)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(0.0..max * 1.02, 0.0..top * 1.1)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("changes")
            .draw()
            .ok()?;
        chart
            .draw_series(counts.iter().enumerate().map(|(i, c)| {
                let x0 = i as f64 * width;
                Rectangle::new(
                    [(x0, 0.0), (x0 + width * 0.95, f64::from(*c))],
                    COLORS[0].filled(),
                )
            }))
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

/// One horizontal bar per `(label, value)` row, largest scale at `value`'s maximum.
pub fn horizontal_bars(title: &str, x_desc: &str, rows: &[(String, f64)]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let max = rows.iter().map(|r| r.1).fold(0.0_f64, f64::max).max(1.0);
    let n = rows.len() as f64;
    let height = 60 + 22 * rows.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(220)
            .build_cartesian_2d(0.0..max * 1.05, 0.0..n)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_labels(0)
            .disable_y_mesh()
            .draw()
            .ok()?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
                let y = n - i as f64;
                Rectangle::new([(0.0, y - 0.8), (*v, y - 0.2)], COLORS[0].filled())
            }))
            .ok()?;
        for (i, (label, _)) in rows.iter().enumerate() {
            let (_, py) = chart.backend_coord(&(0.0, n - i as f64 - 0.5));
            root.draw(&Text::new(
                label.clone(),
                (8, py - 6),
                ("sans-serif", 12).into_font(),
            ))
            .ok()?;
        }
        root.present().ok()?;
    }
    Some(svg)
}

/// Observed and expected shares side by side per category (upstream).
pub fn shares(title: &str, categories: &[(String, f64, f64)]) -> Option<String> {
    if categories.is_empty() {
        return None;
    }
    let n = categories.len() as f64;
    let top = categories
        .iter()
        .map(|c| c.1.max(c.2))
        .fold(0.0_f64, f64::max)
        .max(0.01);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 300)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(44)
            .build_cartesian_2d(0.0..n, 0.0..top * 1.15)
            .ok()?;
        chart
            .configure_mesh()
            .x_labels(0)
            .disable_x_mesh()
            .y_desc("share")
            .draw()
            .ok()?;
        for (k, pick) in [|c: &(String, f64, f64)| c.1, |c: &(String, f64, f64)| c.2]
            .into_iter()
            .enumerate()
        {
            let label = if k == 0 { "observed" } else { "expected" };
            chart
                .draw_series(categories.iter().enumerate().map(|(i, c)| {
                    let x0 = i as f64 + 0.1 + k as f64 * 0.4;
                    Rectangle::new([(x0, 0.0), (x0 + 0.38, pick(c))], COLORS[k].filled())
                }))
                .ok()?
                .label(label)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], COLORS[k].filled())
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .ok()?;
        for (i, (name, _, _)) in categories.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(
                name.clone(),
                (px - 4 * name.len() as i32 / 2 - 4, py + 8),
                ("sans-serif", 12).into_font(),
            ))
            .ok()?;
        }
        root.present().ok()?;
    }
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_with_their_data() {
        let h = histogram("latency", "ms", &[0.5, 0.7, 1.2, 9.0]).unwrap();
        assert!(h.starts_with("<svg") && h.contains("<rect"), "{h}");
        assert!(h.contains("latency"));
        let b = horizontal_bars(
            "converge",
            "ms",
            &[("uri_equal".into(), 12.0), ("hash".into(), 3.0)],
        )
        .unwrap();
        assert!(b.contains("uri_equal") && b.contains("hash"));
        let s = shares(
            "3:1",
            &[("alpha".into(), 0.74, 0.75), ("beta".into(), 0.26, 0.25)],
        )
        .unwrap();
        assert!(s.contains("alpha") && s.contains("observed") && s.contains("expected"));
        assert!(histogram("none", "ms", &[]).is_none());
    }
}
