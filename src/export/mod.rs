//! The only code that writes files: every exporter renders the one [`crate::report`] model
//! (text in the OEMPUTX layout, TSV/CSV, Markdown, JSON), and [`write_output`] writes each
//! atomically (a temporary file renamed into place) so a crash never leaves half a report.

pub mod account;
pub mod beyond;
pub mod cells;
pub mod compare;
pub mod cpu;
pub mod delimited;
pub mod gate;
pub mod history;
pub mod identity;
pub mod ladder;
// The HTML reports come with the `html` cargo feature; a build without it refuses
// --export-html (config::outputs) and saves runs without their .html.
pub mod artifacts;
#[cfg(feature = "html")]
pub mod html;
pub mod json;
pub mod markdown;
pub mod matrix;
pub mod openmetrics;
pub mod outputs;
pub mod profile;
pub mod pubsub;
pub mod rows;
pub mod run_reports;
pub mod sweep;
pub mod text;

/// Text from outside as it may reach a terminal or a CI log on one line; it lives below
/// every layer that carries such text (`crate::terminal`), and is named here too, beside the
/// other sinks' escapes.
pub use crate::terminal::{for_terminal, for_terminal_lines};

/// Text from outside as XML 1.0 may carry it: the characters the standard forbids (C0
/// controls but tab, newline and carriage return; U+FFFE, U+FFFF) become U+FFFD. The XML
/// writer escapes markup; this keeps a group name with a control character from making
/// the whole JUnit file ill-formed.
pub(crate) fn for_xml(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// A GitHub Actions workflow command's property value (`title=…`), escaped as the runner
/// reads it: `%`, CR, LF, `:` and `,` percent-encoded, so that a name cannot end the
/// property or start another command.
pub(crate) fn for_github_property(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// Write `body` to `path` atomically (see [`write_atomic`]); an error says what was being
/// written where, e.g. "writing the sweep TSV to out.tsv".
pub(crate) fn write_output(path: &std::path::Path, what: &str, body: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    write_atomic(path, body.as_bytes())
        .with_context(|| format!("writing {what} to {}", path.display()))
}

/// Save outputs in the reports folder as `STAMP-LABEL.EXT`, STAMP being `start_utc` without
/// separators (20261130T074012123456Z) so that the names sort by time; `files` are
/// (extension, what, body). Returns the common path without the extension.
pub(crate) fn save_in_folder(
    dir: &std::path::Path,
    start_utc: &str,
    label: &str,
    files: &[(&str, &str, &str)],
) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "creating the reports folder {} (or pass --no-save)",
            dir.display()
        )
    })?;
    let stamp = start_utc.replace([':', '-', '.'], "");
    let base = dir.join(format!("{stamp}-{label}"));
    // One file that cannot be written does not keep the others from being written.
    let failed: Vec<String> = files
        .iter()
        .filter_map(|(ext, what, body)| {
            // Appended, not with_extension: a label may contain dots.
            let mut name = base.clone().into_os_string();
            name.push(format!(".{ext}"));
            write_output(std::path::Path::new(&name), what, body)
                .err()
                .map(|e| format!("{e:#}"))
        })
        .collect();
    if failed.is_empty() {
        Ok(base)
    } else {
        Err(anyhow::anyhow!("{}", failed.join("; ")))
    }
}

/// The one way a command's outputs end: every failure, named, in one error (the exit says
/// runtime failure); nothing when all were written.
pub(crate) fn all_written(failed: Vec<String>) -> anyhow::Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    Err(anyhow::anyhow!(
        "{}; every other output was written",
        failed.join("; ")
    ))
}

/// Text for a person, on stdout: to stderr when an output holds stdout (`-`), which then
/// carries that output alone ([`print_output`]).
pub(crate) fn print_stdout(text: &str) -> anyhow::Result<()> {
    // The one edge of every text for a person: what a broker or a file put in it is defused.
    let text = for_terminal_lines(text);
    if crate::terminal::STDOUT_TAKEN.load(std::sync::atomic::Ordering::Relaxed) {
        crate::say_raw!("{text}");
        return Ok(());
    }
    print_output(&text)
}

/// The output named `-`, on stdout whatever else, without panicking when stdout is full
/// or closed (print! panics): a reader that went away (EPIPE, `| head`) is not an error;
/// any other failure is, naming stdout, so that the caller can exit 1 — after the files
/// were written.
pub(crate) fn print_output(text: &str) -> anyhow::Result<()> {
    match crate::files::write_watching(&mut std::io::stdout().lock(), text.as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!(
            "cannot write to stdout ({e}); the report files were written: check where stdout goes, or use --quiet"
        )),
    }
}

/// Write `bytes` to `path` atomically (a temporary file in the same folder, then a rename),
/// or to stdout when `path` is `-`.
pub(crate) fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if path.as_os_str() == "-" {
        return crate::files::write_watching(&mut std::io::stdout().lock(), bytes);
    }
    // A device, FIFO or socket (/dev/null, /dev/stdout, a named pipe) is written in place:
    // renaming a temporary file onto it would replace the device node with a regular file,
    // which for /dev/null breaks every other program on the machine. A FIFO with no reader
    // is an error, not a wait (files::open_in_place).
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut f = crate::files::open_in_place(path)?;
        return crate::files::write_watching(&mut f, bytes);
    }
    // Through a symbolic link, the file it points to is replaced, not the link.
    let target = crate::files::output_target(path)?;
    let path = target.as_path();
    let dir = crate::files::folder_of(path);
    // Created with mode 0666, which the kernel narrows by the user's umask, as for any file
    // a program writes (tempfile's default, 0600, ignored the umask).
    let mut tmp = {
        use std::os::unix::fs::PermissionsExt;
        tempfile::Builder::new()
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)?
    };
    // A file that is replaced keeps its mode: a report someone made private (0600)
    // stays private.
    if let Ok(old) = std::fs::metadata(path)
        && old.is_file()
    {
        tmp.as_file().set_permissions(old.permissions())?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn xml_and_workflow_properties_carry_no_character_that_breaks_them() {
        assert_eq!(
            super::for_xml("a\u{1}b\tc\u{ffff}"),
            "a\u{fffd}b\tc\u{fffd}"
        );
        assert_eq!(
            super::for_github_property("Q:M,G%\n::error::x"),
            "Q%3AM%2CG%25%0A%3A%3Aerror%3A%3Ax"
        );
    }

    use super::write_atomic;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("private.json");
        std::fs::write(&path, "old").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        write_atomic(&path, b"new").expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
    }

    #[test]
    fn a_regular_file_is_replaced_whole() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("r.json");
        std::fs::write(&path, "old and longer").expect("write");
        write_atomic(&path, b"new").expect("atomic write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
    }

    #[test]
    fn a_fifo_with_no_reader_is_an_error_naming_it_not_a_wait() {
        // Issue 48, item 20: opening it for writing waited for a reader forever.
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = crate::files::test_fifo(&dir.path().join("pipe"));
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(write_atomic(&path, b"report").map_err(|e| e.to_string()));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("the write returns instead of waiting for a reader");
        let e = got.expect_err("no reader is an error");
        assert!(
            e.contains("is a FIFO with no reader: start the reader first"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_is_written_in_place_not_replaced() {
        // The same path as /dev/null takes: renaming onto a device node would replace it.
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = crate::files::test_fifo(&dir.path().join("pipe"));
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).expect("read the fifo"))
        };
        // The reader first: until its thread has the FIFO open, a write is refused.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut written = write_atomic(&fifo, b"report");
        while written.is_err() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            written = write_atomic(&fifo, b"report");
        }
        written.expect("write to the fifo");
        assert_eq!(reader.join().expect("reader"), b"report");
        let kind = std::fs::metadata(&fifo).expect("still there").file_type();
        assert!(kind.is_fifo(), "the FIFO must survive the write");
    }
}
