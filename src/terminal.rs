//! Text from outside (a broker's error, a profile file, a process name, a saved report) as
//! it may reach a terminal or a CI log. Pure and at the bottom of the layers, so that every
//! edge that prints — `say!` on stderr, the text for a person on stdout, the gate's
//! annotations — uses this one function whatever module the text came through; a
//! transport's error keeps the broker's words as they were (a JSON report holds them raw,
//! escaped by serde) and is defused only where it is printed. The printing macros (`say!`,
//! `say_raw!`, `out!`, `outln!`) and the stdout flags they read live here too, so that any
//! layer may print without reaching up the map.

/// Set when a line could not be written to stdout (not when its reader went away): `main`
/// then ends with exit 1 naming stdout, once the files are written. Here, at the bottom, so
/// that every layer that prints can read it.
pub static STDOUT_LOST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set by `main` when an output was given `-`: stdout then carries that output alone, and
/// everything written for a person goes to stderr.
pub static STDOUT_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `eprintln!` that cannot panic: a full or closed stderr loses the line, never the run
/// (the report files are written before anything is said).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        // Every line on stderr may carry text from outside (a broker's error above all):
        // defused here, once, for a terminal or a CI log.
        let line = $crate::terminal::for_terminal_lines(&::std::format!($($arg)*));
        let _ = ::std::writeln!(::std::io::stderr(), "{line}");
    }};
}

/// `eprint!` that cannot panic (see [`say!`]).
#[macro_export]
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stderr(), $($arg)*);
    }};
}

/// `print!` that cannot panic: a full stdout is remembered in [`STDOUT_LOST`], a reader
/// that went away (`| head`) is no error. To stderr when an output holds stdout
/// ([`STDOUT_TAKEN`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        if $crate::terminal::STDOUT_TAKEN.load(::std::sync::atomic::Ordering::Relaxed) {
            $crate::say_raw!($($arg)*);
        } else {
        let mut o = ::std::io::stdout().lock();
        if let Err(e) = ::std::write!(o, $($arg)*).and_then(|()| o.flush()) {
            if e.kind() != ::std::io::ErrorKind::BrokenPipe {
                $crate::terminal::STDOUT_LOST.store(true, ::std::sync::atomic::Ordering::Relaxed);
            }
        }
        }
    }};
}

/// `println!` that cannot panic (see [`out!`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        $crate::out!("{}\n", ::std::format_args!($($arg)*))
    }};
}

/// One line of text from outside: every control character (an escape sequence, a carriage
/// return, a newline) becomes U+FFFD, and a `::` that opens the line (after any blanks) —
/// a GitHub Actions workflow command such as `::error::` or `::add-mask::`, which the
/// runner reads after trimming leading blanks — is broken with a zero-width space.
pub fn for_terminal(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    defuse_command(clean)
}

/// Lines of text to print, whole messages included (an error with a flow's last lines, a
/// report): each line as [`for_terminal`] makes it, the line breaks and tabs kept. A
/// broker's text that carries a newline thus never opens a line of its own with `::`.
pub fn for_terminal_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let clean: String = line
            .chars()
            .map(|c| match c {
                '\t' => c,
                c if c.is_control() => '\u{fffd}',
                c => c,
            })
            .collect();
        out.push_str(&defuse_command(clean));
    }
    out
}

/// A line whose first non-blank characters are `::`, with a zero-width space between them.
fn defuse_command(line: String) -> String {
    let blanks = line.len() - line.trim_start().len();
    if line[blanks..].starts_with("::") {
        format!("{}:\u{200b}{}", &line[..blanks], &line[blanks + 1..])
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_for_a_terminal_carries_no_control_character_or_workflow_command() {
        assert_eq!(for_terminal("plain name"), "plain name");
        assert_eq!(
            for_terminal("\u{1b}[2J\rname\nnext"),
            "\u{fffd}[2J\u{fffd}name\u{fffd}next"
        );
        let ci = for_terminal("::error::pwned");
        assert!(!ci.starts_with("::"), "{ci}");
        assert!(ci.ends_with("error::pwned"), "{ci}");
        // The runner trims leading blanks before it looks for a command.
        assert!(
            !for_terminal("  ::add-mask::x")
                .trim_start()
                .starts_with("::")
        );
    }

    #[test]
    fn lines_for_a_terminal_keep_their_breaks_and_open_no_workflow_command() {
        let text = "Error: the broker said: ::error::pwned\u{1b}[31m\n::add-mask::x\n\tindented";
        let shown = for_terminal_lines(text);
        assert_eq!(shown.lines().count(), 3, "{shown}");
        assert!(!shown.contains('\u{1b}'), "{shown}");
        for line in shown.lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
        }
        assert!(shown.ends_with("\n\tindented"), "{shown}");
        assert_eq!(for_terminal_lines("a\r\nb"), "a\u{fffd}\nb");
        assert_eq!(for_terminal_lines("plain\n"), "plain\n");
    }
}
