//! The outputs a command is asked for, checked before anything is measured: each can be
//! written where it is asked (its folder exists, it is no folder itself, its name is not
//! too long), no two land on one file, none replaces one of the command's inputs, and the
//! reports folder is a folder. A problem found after a five-minute run costs the run.

use super::{ConfigError, bad};
use std::path::{Path, PathBuf};

/// One output: its flag and its path (`-` is stdout).
pub type Output<'a> = (&'static str, Option<&'a Path>);

/// Check `outputs`, the reports folder (`None` under --no-save) and that no output is one
/// of `inputs`.
pub fn check(
    outputs: &[Output],
    reports_dir: Option<&Path>,
    inputs: &[&Path],
) -> Result<(), ConfigError> {
    let given: Vec<(&'static str, &Path)> = outputs
        .iter()
        .filter_map(|(flag, p)| p.map(|p| (*flag, p)))
        .collect();
    for (flag, path) in &given {
        check_built(flag, Some(path))?;
        check_output(flag, path)?;
    }
    let stdout: Vec<&str> = given
        .iter()
        .filter(|(_, p)| p.as_os_str() == "-")
        .map(|(f, _)| *f)
        .collect();
    if stdout.len() > 1 {
        return Err(bad(
            stdout[1],
            format!(
                "{} all write to stdout (-), where they would run together: send one there and the others to files",
                stdout.join(" and ")
            ),
        ));
    }
    let files: Vec<(&'static str, PathBuf)> = given
        .iter()
        // Two outputs on one device (/dev/null) are fine; on one FIFO, the first write's
        // close ends the reader's stream before the second.
        .filter(|(_, p)| p.as_os_str() != "-" && (!is_device(p) || crate::files::is_fifo(p)))
        .map(|(f, p)| (*f, resolved(p)))
        .collect();
    for (i, (flag, path)) in files.iter().enumerate() {
        if let Some((other, _)) = files[..i].iter().find(|(_, q)| q == path) {
            return Err(bad(
                flag,
                format!(
                    "{} is also {other}'s file: one would overwrite the other; give each output a path of its own",
                    path.display()
                ),
            ));
        }
        if inputs.iter().any(|input| resolved(input) == *path) {
            return Err(bad(
                flag,
                format!(
                    "{} is one of this command's inputs: writing it would replace what is read; give the output another path",
                    path.display()
                ),
            ));
        }
    }
    if let Some(dir) = reports_dir {
        check_reports_dir(dir)?;
    }
    Ok(())
}

/// The outputs a build may leave out, by flag: the cargo feature that writes each, and
/// whether this build has it.
const GATED: [(&str, &str, bool); 1] = [("--export-html", "html", cfg!(feature = "html"))];

/// `flag`'s output, when given, is one this build writes: a left-out one is refused by its
/// feature before anything is measured (the run would otherwise end without it).
pub(crate) fn check_built(flag: &'static str, path: Option<&Path>) -> Result<(), ConfigError> {
    match GATED.iter().find(|(f, ..)| *f == flag) {
        Some(&(_, feature, false)) if path.is_some() => {
            Err(ConfigError::NotBuilt { flag, feature })
        }
        _ => Ok(()),
    }
}

fn is_device(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The path as the file system will resolve it: its folder canonical (symlinks followed),
/// so that `./a.json`, `a.json` and `sub/../a.json` are one file; the file itself too when
/// it exists (a symlink to the input is the input).
fn resolved(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let dir = crate::files::folder_of(p);
    match (std::fs::canonicalize(dir), p.file_name()) {
        (Ok(d), Some(n)) => d.join(n),
        _ => p.to_path_buf(),
    }
}

/// An output can be written where it is asked: its folder exists, it is not a folder, its
/// name is not too long. `-` (stdout) and devices are fine.
pub(crate) fn check_output(flag: &'static str, path: &Path) -> Result<(), ConfigError> {
    // A FIFO must have its reader now: found after the run, its absence cost the run. The
    // FIFO is kept open from here to its write, or its reader would see an end of file.
    if crate::files::is_fifo(path) {
        return crate::files::hold_fifo(path)
            .map_err(|e| bad(flag, format!("{e} (checked before the run)")));
    }
    if path.as_os_str() == "-" || is_device(path) {
        return Ok(());
    }
    // A link is written at its target (files::output_target): one to nowhere is refused
    // now, not after the run.
    if let Err(e) = crate::files::output_target(path) {
        return Err(bad(flag, format!("{e} (checked before the run)")));
    }
    if path.is_dir() {
        return Err(bad(
            flag,
            format!(
                "{} is a folder: give a file name in it (checked before the run)",
                path.display()
            ),
        ));
    }
    if path.file_name().is_some_and(|n| n.len() > 255) {
        return Err(bad(
            flag,
            format!("{}: the file name is longer than 255 bytes", path.display()),
        ));
    }
    let dir = crate::files::folder_of(path);
    if !dir.is_dir() {
        return Err(bad(
            flag,
            format!(
                "{}: the folder {} does not exist; create it or give another path (checked before the run, so that no measurement is lost)",
                path.display(),
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// The reports folder is a folder, or can be made one: not a file, not a symlink to
/// nowhere.
fn check_reports_dir(dir: &Path) -> Result<(), ConfigError> {
    let flag = "--reports-dir";
    match (std::fs::symlink_metadata(dir), std::fs::metadata(dir)) {
        (Err(_), _) => Ok(()),
        (Ok(_), Ok(m)) if m.is_dir() => Ok(()),
        (Ok(_), Ok(_)) => Err(bad(
            flag,
            format!(
                "{} is a file, not a folder: give another --reports-dir, or --no-save",
                dir.display()
            ),
        )),
        (Ok(_), Err(_)) => Err(bad(
            flag,
            format!(
                "{} is a symbolic link to nothing: point it at a folder, give another --reports-dir, or --no-save",
                dir.display()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_on_one_file_onto_an_input_or_into_a_file_as_folder_are_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        let a = d.join("a.json");
        std::fs::write(&a, "{}").expect("write");
        let same = d.join(".").join("b.json");
        let b = d.join("b.json");
        let err = |r: Result<(), ConfigError>| r.err().map(|e| e.to_string()).unwrap_or_default();
        let e = err(check(
            &[("--export-json", Some(&b)), ("--export-tsv", Some(&same))],
            None,
            &[],
        ));
        assert!(e.contains("also --export-json's file"), "{e}");
        let e = err(check(&[("--export-tsv", Some(&a))], None, &[&a]));
        assert!(e.contains("one of this command's inputs"), "{e}");
        let e = err(check(&[("--export-json", Some(d))], None, &[]));
        assert!(e.contains("is a folder"), "{e}");
        let e = err(check(&[], Some(&a), &[]));
        assert!(e.contains("is a file, not a folder"), "{e}");
        let dangling = d.join("gone");
        std::os::unix::fs::symlink(d.join("nowhere"), &dangling).expect("symlink");
        let e = err(check(&[], Some(&dangling), &[]));
        assert!(e.contains("symbolic link to nothing"), "{e}");
        let dev = Path::new("/dev/null");
        assert!(
            check(
                &[("--export-json", Some(dev)), ("--export-tsv", Some(dev))],
                Some(&d.join("reports")),
                &[],
            )
            .is_ok()
        );
    }

    #[test]
    fn a_fifo_output_needs_its_reader_before_the_run_and_keeps_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = crate::files::test_fifo(&dir.path().join("pipe"));
        let e = check(&[("--export-json", Some(&fifo))], None, &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("a FIFO with no reader: start the reader first")
                && e.contains("--export-json"),
            "{e}"
        );
        // With a reader waiting, the check passes and the reader sees no end of file
        // before the report: the FIFO is held open for the write.
        let path = fifo.clone();
        let reader = std::thread::spawn(move || std::fs::read(path).expect("read the fifo"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut checked = check(&[("--export-json", Some(&fifo))], None, &[]);
        while checked.is_err() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            checked = check(&[("--export-json", Some(&fifo))], None, &[]);
        }
        assert!(checked.is_ok(), "{checked:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !reader.is_finished(),
            "the reader got an end of file before the report"
        );
        // What write_atomic does with an output in place (export sits above config).
        let mut held = crate::files::open_in_place(&fifo).expect("the held FIFO");
        std::io::Write::write_all(&mut held, b"report").expect("written");
        drop(held);
        assert_eq!(reader.join().expect("reader"), b"report");
    }

    #[test]
    fn html_is_written_with_its_feature_and_refused_by_it_without() {
        let e = ConfigError::NotBuilt {
            flag: "--export-html",
            feature: "html",
        }
        .to_string();
        assert!(
            e.starts_with("--export-html needs") && e.contains("--features html"),
            "{e}"
        );
        let asked = check_built("--export-html", Some(Path::new("r.html")));
        assert_eq!(asked.is_ok(), cfg!(feature = "html"));
        assert!(check_built("--export-html", None).is_ok());
        assert!(check_built("--export-json", Some(Path::new("r.json"))).is_ok());
    }
}
