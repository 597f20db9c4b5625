//! Small tables given as rows of cells (header first), rendered as aligned text, delimited
//! text (TSV/CSV) or Markdown: the shape of the `sweep`, `compare` and gate tables.

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};

/// Aligned text through comfy-table, without borders so that it pastes into a spreadsheet
/// or a mail as columns: the first column left-aligned, the others right-aligned (they are
/// figures). On a terminal, a table wider than the window wraps its cells rather than its
/// lines; piped or redirected, lines are never wrapped.
pub fn text(rows: &[Vec<String>]) -> String {
    let Some((header, body)) = rows.split_first() else {
        return String::new();
    };
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header)
        .add_rows(body);
    for (i, column) in table.column_iter_mut().enumerate() {
        column.set_cell_alignment(if i == 0 {
            CellAlignment::Left
        } else {
            CellAlignment::Right
        });
    }
    // comfy-table pads the last column too; a line's trailing blanks are noise in a diff.
    let mut out: String = table
        .lines()
        .map(|l| l.trim_end().to_string() + "\n")
        .collect();
    if out.is_empty() {
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
        w.write_record(r.iter().map(|c| safe_cell(c).into_owned()))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A text cell as a spreadsheet may safely open it: one that starts like a formula (`=`,
/// `+`, `-`, `@`, tab or carriage return) and is not a number gets a leading `'`, so that a
/// process named `=HYPERLINK(…)` stays text (OWASP, "CSV Injection"). Numbers, negative
/// ones included, are left as they are.
///
/// Every control character (an escape sequence, a tab, a line break: a process may name
/// itself with any) becomes U+FFFD first, as on a terminal ([`crate::terminal`]): a cell is
/// one line of plain text wherever it is pasted.
pub(crate) fn safe_cell(cell: &str) -> std::borrow::Cow<'_, str> {
    let cell: std::borrow::Cow<'_, str> = if cell.chars().any(char::is_control) {
        std::borrow::Cow::Owned(
            cell.chars()
                .map(|c| if c.is_control() { '\u{fffd}' } else { c })
                .collect(),
        )
    } else {
        std::borrow::Cow::Borrowed(cell)
    };
    let risky = cell.starts_with(['=', '+', '-', '@']);
    let number = cell.replace(',', ".").parse::<f64>().is_ok();
    if risky && !number {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        cell
    }
}

/// Text from outside (a process name, a label, a warning that quotes one) as Markdown shows
/// it: literally. Control characters become U+FFFD, `|` cannot end a table cell, and `<`,
/// `>` and `&` are entities, so that a name holding markup is not rendered as markup (GitHub
/// renders inline HTML in a job summary).
pub(crate) fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `text` as a Markdown code span that nothing in it can end: fenced by one backtick more
/// than its longest run of them (CommonMark §6.1), spaced from a backtick at either end,
/// with control characters (a newline would end the line, and the span) replaced. Raw HTML
/// inside a code span is shown, not rendered.
pub(crate) fn markdown_code(text: &str) -> String {
    if text.is_empty() {
        // A code span cannot be empty: two backticks would show as themselves.
        return "` `".to_string();
    }
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    let longest = clean.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if clean.starts_with('`') || clean.ends_with('`') || clean.starts_with(' ') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{clean}{pad}{fence}")
}

/// A Markdown table, each cell through [`markdown_text`].
pub fn markdown(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r.iter().map(|c| markdown_text(c)).collect();
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

    #[test]
    fn a_code_span_holds_backticks_newlines_and_html() {
        assert_eq!(markdown_code("base.json"), "`base.json`");
        // A baseline path with a backtick, a newline and raw HTML broke out of the gate's
        // step summary: the fence outgrows the backticks, the newline is no line break.
        let hostile = "b`ase\n<img src=x onerror=alert(1)>``.json";
        let span = markdown_code(hostile);
        assert_eq!(
            span,
            "```b`ase\u{fffd}<img src=x onerror=alert(1)>``.json```"
        );
        assert!(!span.contains('\n'));
        assert_eq!(markdown_code("`x`"), "`` `x` ``");
    }
}

#[cfg(test)]
mod safe_cell_tests {
    use super::*;

    #[test]
    fn formulas_become_text_and_numbers_stay_numbers() {
        assert_eq!(
            safe_cell("=HYPERLINK(\"http://x\",\"y\")"),
            "'=HYPERLINK(\"http://x\",\"y\")"
        );
        for risky in ["+cmd", "-x", "@SUM(A1)"] {
            assert_eq!(safe_cell(risky), format!("'{risky}"));
        }
        // Control characters are no part of a cell, wherever they stand.
        assert_eq!(safe_cell("\tx"), "\u{fffd}x");
        assert_eq!(safe_cell("=a\u{1b}[2J\r"), "'=a\u{fffd}[2J\u{fffd}");
        for kept in ["-1.5", "-0,25", "+3", "beam.smp", "FLOW*", "", "12"] {
            assert_eq!(safe_cell(kept), kept);
        }
        let csv = delimited(&[vec!["=1+1".into(), "-2.5".into()]], b',').expect("csv");
        assert_eq!(csv, "'=1+1,-2.5\n");
    }
}
