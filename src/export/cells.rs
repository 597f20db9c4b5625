//! Small tables given as rows of cells (header first), rendered as aligned text, delimited
//! text (TSV/CSV) or Markdown: the shape of the `sweep` and `compare` tables.

/// Aligned text: the first column left-aligned, the others right-aligned (they are figures).
pub fn text(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let w = width[c];
            if c == 0 {
                line.push_str(&format!(" {cell:<w$}"));
            } else {
                line.push_str(&format!("  {cell:>w$}"));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Delimited text (RFC 4180 quoting), e.g. b'\t' for TSV.
pub fn delimited(rows: &[Vec<String>], delimiter: u8) -> Result<String, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .from_writer(Vec::new());
    for r in rows {
        w.write_record(r)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A Markdown table; `|` inside a cell is escaped.
pub fn markdown(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
        if i == 0 {
            let align: Vec<&str> = (0..r.len())
                .map(|c| if c == 0 { "---" } else { "---:" })
                .collect();
            out.push_str(&format!("| {} |\n", align.join(" | ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Vec<String>> {
        vec![
            vec!["group".into(), "us".into()],
            vec!["FLOW".into(), "12.5".into()],
            vec!["A|B".into(), "3".into()],
        ]
    }

    #[test]
    fn each_format_renders_every_cell() {
        assert_eq!(text(&rows()), " group    us\n FLOW   12.5\n A|B       3\n");
        assert_eq!(
            delimited(&rows(), b'\t').expect("tsv"),
            "group\tus\nFLOW\t12.5\nA|B\t3\n"
        );
        assert_eq!(
            markdown(&rows()),
            "| group | us |\n| --- | ---: |\n| FLOW | 12.5 |\n| A\\|B | 3 |\n"
        );
    }
}
