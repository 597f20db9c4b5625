//! The charts of the HTML reports, drawn as SVG strings with plotters: CPU per transaction
//! by group (user and system stacked), the round trip against its percentile, a figure per
//! round, and bars with intervals. Each returns the SVG text to put in a figure.

use plotters::prelude::*;

/// Plot colours, in order: distinct in print and for the common colour blindnesses
/// (Okabe & Ito's palette).
pub const COLOURS: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

type Drawn = Result<String, Box<dyn std::error::Error>>;

/// Stacked bars: each group's user (solid) and system (light) µs/tran.
pub(crate) fn cpu_bars(groups: &[(String, f64, f64)]) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE)?;
        let top = groups.iter().map(|(_, u, s)| u + s).fold(0.0f64, f64::max) * 1.15;
        let n = groups.len().max(1);
        let names: Vec<String> = groups.iter().map(|(g, ..)| g.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption("CPU per transaction by group (µs)", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top.max(1e-3))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("us per transaction")
            .draw()?;
        let user = colour(0);
        let system = colour(5);
        chart
            .draw_series(groups.iter().enumerate().map(|(i, (_, u, _))| {
                let x = i as f64;
                Rectangle::new([(x - 0.3, 0.0), (x + 0.3, *u)], user.filled())
            }))?
            .label("user")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], user.filled()));
        chart
            .draw_series(groups.iter().enumerate().map(|(i, (_, u, s))| {
                let x = i as f64;
                Rectangle::new([(x - 0.3, *u), (x + 0.3, u + s)], system.filled())
            }))?
            .label("system")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], system.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// Nines: 50 % → 0.3, 90 % → 1, 99 % → 2, 99.9 % → 3; 100 % drawn at `cap`.
fn nines(pct: f64, cap: f64) -> f64 {
    if pct >= 100.0 {
        cap
    } else {
        (-(1.0 - pct / 100.0).log10()).min(cap)
    }
}

/// The round trip against its percentile, the tail spread out (percentiles as nines).
pub(crate) fn percentile_plot(points: &[(f64, f64)]) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE)?;
        let cap = 5.5;
        // A log scale: the tail is often 100 times the median, which a linear axis flattens.
        let top = points.iter().map(|p| p.1).fold(0.0f64, f64::max).max(1e-3) * 1.5;
        let bottom = points
            .iter()
            .map(|p| p.1)
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min)
            .min(top / 10.0)
            / 1.5;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Round trip by percentile (us, log scale)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..cap, (bottom..top).log_scale())?;
        chart
            .configure_mesh()
            .x_labels(7)
            .x_label_formatter(&|x: &f64| match x.round() as i64 {
                0 => "0%".into(),
                1 => "90%".into(),
                2 => "99%".into(),
                3 => "99.9%".into(),
                4 => "99.99%".into(),
                5 => "99.999%".into(),
                _ => String::new(),
            })
            .x_desc("percentile (max at the right edge)")
            .y_desc("us")
            .y_label_formatter(&|y| {
                if *y >= 10.0 {
                    format!("{y:.0}")
                } else {
                    format!("{y:.1}")
                }
            })
            .draw()?;
        let series: Vec<(f64, f64)> = points
            .iter()
            .map(|(p, us)| (nines(*p, cap), us.max(bottom)))
            .collect();
        chart.draw_series(LineSeries::new(series.clone(), colour(0).stroke_width(2)))?;
        chart.draw_series(
            series
                .iter()
                .map(|p| Circle::new(*p, 3, colour(0).filled())),
        )?;
        root.present()?;
    }
    Ok(svg)
}

/// A figure per round, a line per series (e.g. each group and the captured total).
pub(crate) fn rounds_plot(title: &str, series: &[(String, Vec<f64>)]) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = series.iter().map(|s| s.1.len()).max().unwrap_or(1).max(1);
        let top = series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .fold(0.0f64, f64::max)
            * 1.35;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0.5..n as f64 + 0.5, 0.0..top.max(1e-3))?;
        chart
            .configure_mesh()
            .x_labels(n.min(20))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 && *x >= 1.0 {
                    format!("{}", x.round() as i64)
                } else {
                    String::new()
                }
            })
            .x_desc("round")
            .draw()?;
        for (i, (name, values)) in series.iter().enumerate() {
            let c = colour(i);
            let points: Vec<(f64, f64)> = values
                .iter()
                .enumerate()
                .map(|(r, v)| (r as f64 + 1.0, *v))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// The colour of a change point's marker, and of nothing else in [`history_plot`]: a test
/// counts the markers by it.
pub const MARKER: RGBColor = COLOURS[1];

/// Main's runs, a figure each (x = the run's index from 0), with a vertical marker just
/// before each change point's run and each segment's median as a dashed level. `steps`
/// are (index, median before, median after).
pub(crate) fn history_plot(
    title: &str,
    y_desc: &str,
    values: &[f64],
    steps: &[(usize, f64, f64)],
) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = values.len().max(1);
        let finite = || values.iter().copied().filter(|v| v.is_finite());
        let top = finite().fold(0.0f64, f64::max).max(1e-3);
        let bottom = finite().fold(top, f64::min);
        let pad = ((top - bottom) * 0.15).max(top * 0.02);
        let (y0, y1) = ((bottom - pad).max(0.0), top + pad);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, y0..y1)?;
        chart
            .configure_mesh()
            .x_labels(n.min(16))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 && *x >= 0.0 {
                    format!("{}", x.round() as i64)
                } else {
                    String::new()
                }
            })
            .x_desc("run (index, oldest first)")
            .y_desc(y_desc)
            .draw()?;
        // Each segment's median, between the change points.
        let mut bounds: Vec<(usize, f64)> = vec![(0, steps.first().map_or(f64::NAN, |s| s.1))];
        bounds.extend(steps.iter().map(|s| (s.0, s.2)));
        for (i, &(start, level)) in bounds.iter().enumerate() {
            let end = bounds.get(i + 1).map_or(n, |b| b.0);
            if level.is_finite() {
                chart.draw_series(DashedLineSeries::new(
                    vec![(start as f64 - 0.5, level), (end as f64 - 0.5, level)],
                    6,
                    4,
                    RGBColor(120, 120, 120).stroke_width(1),
                ))?;
            }
        }
        let points: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| (i as f64, *v))
            .collect();
        let c = colour(0);
        chart.draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?;
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
        // One element per change point, so that each is one marker in the SVG.
        chart.draw_series(steps.iter().map(|s| {
            let x = s.0 as f64 - 0.5;
            PathElement::new(vec![(x, y0), (x, y1)], MARKER.stroke_width(2))
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// Lines over time: each series (name, points of (seconds, value)).
pub(crate) fn time_plot(title: &str, y_desc: &str, series: &[(String, Vec<(f64, f64)>)]) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE)?;
        let right = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.0))
            .fold(0.0f64, f64::max)
            .max(1e-3);
        let top = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.3;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..right, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("seconds since the start")
            .y_desc(y_desc)
            .draw()?;
        for (i, (name, points)) in series.iter().enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// Bars with an interval each (median, low, high), labelled; a dashed band at ±`band`
/// around `reference` when given (a tolerance, a minimum effect).
pub(crate) fn interval_bars(
    title: &str,
    y_desc: &str,
    bars: &[(String, f64, f64, f64)],
    band: Option<(f64, f64)>,
) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = bars.len().max(1);
        let lo = bars
            .iter()
            .map(|b| b.2)
            .chain(band.map(|(r, w)| r - w))
            .fold(0.0f64, f64::min);
        let hi = bars
            .iter()
            .map(|b| b.3)
            .chain(band.map(|(r, w)| r + w))
            .fold(0.0f64, f64::max);
        let pad = ((hi - lo) * 0.15).max(1e-3);
        let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, (lo - pad)..(hi + pad))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_desc)
            .draw()?;
        if let Some((r, w)) = band {
            for y in [r - w, r + w] {
                chart.draw_series(DashedLineSeries::new(
                    vec![(-0.5, y), (n as f64 - 0.5, y)],
                    6,
                    4,
                    RGBColor(120, 120, 120).stroke_width(1),
                ))?;
            }
        }
        chart.draw_series(bars.iter().enumerate().map(|(i, (_, m, _, _))| {
            let x = i as f64;
            Rectangle::new(
                [(x - 0.25, 0.0), (x + 0.25, *m)],
                colour(0).mix(0.6).filled(),
            )
        }))?;
        chart.draw_series(bars.iter().enumerate().map(|(i, (_, m, l, h))| {
            ErrorBar::new_vertical(i as f64, *l, *m, *h, BLACK.filled(), 10)
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// An axis drawn on a log scale: values as their log10, labels back as values.
fn axis_label(v: f64, log: bool) -> String {
    let x = if log { 10f64.powf(v) } else { v };
    // A log axis's ticks fall on any value (158, 251): two figures read as well.
    let x = if log && x >= 10.0 {
        let p = 10f64.powf(x.log10().floor() - 1.0);
        (x / p).round() * p
    } else {
        x
    };
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A figure's value where it is drawn.
fn place(v: f64, log: bool) -> f64 {
    if log { v.max(1e-9).log10() } else { v }
}

type Ranges = ((f64, f64), (f64, f64));

/// Where [`rate_plot`]'s axes go, as drawn (log10 of the rate; of the figure when `log_y`).
fn rate_ranges(
    series: &[(String, Vec<(f64, f64)>)],
    levels: &[(String, f64)],
    marks: &[(String, f64)],
    log_y: bool,
) -> Result<Ranges, Box<dyn std::error::Error>> {
    let xs = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .chain(marks.iter().map(|m| m.1));
    let (x_lo, x_hi) = xs.fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(x), h.max(x)));
    let ys = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .chain(levels.iter().map(|l| l.1));
    let (y_lo, y_hi) = ys
        .filter(|y| y.is_finite() && (!log_y || *y > 0.0))
        .fold((f64::INFINITY, 0.0f64), |(l, h), y| (l.min(y), h.max(y)));
    if !x_lo.is_finite() || !y_lo.is_finite() {
        return Err("nothing to draw".into());
    }
    let x = (
        place(x_lo, true) - 0.1,
        place(x_hi.max(x_lo * 1.01), true) + 0.1,
    );
    let y = if log_y {
        (place(y_lo, true) - 0.15, place(y_hi, true) + 0.25)
    } else {
        (0.0, y_hi.max(1e-3) * 1.25)
    };
    Ok((x, y))
}

/// Figures against the offered rate (a log scale, as the rates of a ladder are steps of a
/// factor): a line per series (name, points of (rate, value)), a dashed level per `levels`
/// (an SLO) and a vertical marker per `marks` (the highest rate that held). `log_y` for a
/// round trip, which grows a hundredfold past the top.
pub(crate) fn rate_plot(
    (title, y_desc): (&str, &str),
    series: &[(String, Vec<(f64, f64)>)],
    levels: &[(String, f64)],
    marks: &[(String, f64)],
    log_y: bool,
) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 360)).into_drawing_area();
        root.fill(&WHITE)?;
        let ((x0, x1), (y0, y1)) = rate_ranges(series, levels, marks, log_y)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc("offered msg/s (log scale)")
            .y_desc(y_desc)
            .x_label_formatter(&|x| axis_label(*x, true))
            .y_label_formatter(&|y| axis_label(*y, log_y))
            .draw()?;
        for (i, (name, points)) in series.iter().enumerate() {
            let c = colour(i);
            let drawn: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.1.is_finite() && (!log_y || p.1 > 0.0))
                .map(|p| (place(p.0, true), place(p.1, log_y)))
                .collect();
            chart
                .draw_series(LineSeries::new(drawn.clone(), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart.draw_series(drawn.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
        }
        for (name, y) in levels {
            let y = place(*y, log_y);
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, y), (x1, y)],
                    6,
                    4,
                    RED.stroke_width(2),
                ))?
                .label(name.as_str())
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
        }
        for (name, x) in marks {
            let x = place(*x, true);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, y0), (x, y1)],
                    MARKER.stroke_width(2),
                )))?
                .label(name.as_str())
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y - 6), (x, y + 6)], MARKER.stroke_width(2))
                });
        }
        // A round trip rises with the rate, a cost falls: the legend where the line is not.
        chart
            .configure_series_labels()
            .position(if log_y {
                SeriesLabelPosition::UpperLeft
            } else {
                SeriesLabelPosition::UpperRight
            })
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_chart_draws_an_svg_with_its_marks() {
        let bars =
            cpu_bars(&[("QMGR".into(), 40.0, 12.0), ("FLOW".into(), 20.0, 15.0)]).expect("bars");
        assert!(
            bars.starts_with("<svg") && bars.matches("<rect").count() >= 4,
            "{bars:.300}"
        );
        let p = percentile_plot(&[(0.0, 10.0), (50.0, 20.0), (99.0, 50.0), (100.0, 90.0)])
            .expect("plot");
        assert!(p.contains("<polyline") || p.contains("<path"), "{p:.300}");
        let r = rounds_plot("t", &[("FLOW".into(), vec![1.0, 2.0, 3.0])]).expect("rounds");
        assert!(r.matches("<circle").count() >= 3);
        let i = interval_bars("t", "%", &[("a".into(), 1.0, 0.5, 1.5)], Some((0.0, 1.0)))
            .expect("bars");
        assert!(i.contains("<rect"));
        assert!((nines(99.0, 5.5) - 2.0).abs() < 1e-9 && nines(100.0, 5.5) == 5.5);
        let series = [(
            "FLOW".to_string(),
            vec![(100.0, 300.0), (1000.0, 120.0), (3000.0, 90.0)],
        )];
        let l = rate_plot(
            ("t", "µs"),
            &series,
            &[("SLO".into(), 200.0)],
            &[("top".into(), 2000.0)],
            true,
        )
        .expect("ladder chart");
        assert!(
            l.matches("<circle").count() >= 3 && l.contains("SLO") && l.contains("top"),
            "{l:.300}"
        );
        assert!(rate_plot(("t", "µs"), &[], &[], &[], false).is_err());
    }
}
