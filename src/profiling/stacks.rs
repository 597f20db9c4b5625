//! `perf script`'s text, one sample at a time.
//!
//! Asked for with `-F comm,pid,tid,time,period,ip,sym,dso --ns`, each sample is a header
//! line, `COMM PID/TID SECONDS.NANOS: PERIOD`, then one line per frame, leaf first,
//! `\tADDR SYMBOL (DSO)`, and a blank line. A command name and a symbol may hold spaces and
//! brackets, so the header is read from its right end and a frame's module is its last
//! bracketed part. inferno's collapser reads this text too, but folds away what a profile
//! per message needs: each sample's time (to keep only the window), its process (to find
//! its group) and its thread (to see lock-in).

use std::io::BufRead;

/// A line longer than this is cut: a C++ or Rust symbol runs to a few KiB at most.
const MAX_LINE: usize = 64 * 1024;

/// One stack sample.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sample {
    pub comm: String,
    pub pid: i32,
    pub tid: i32,
    /// CLOCK_MONOTONIC, ns (perf runs with `-k CLOCK_MONOTONIC`).
    pub time_ns: u64,
    /// CPU time the sample stands for, ns.
    pub period: u64,
    /// Leaf first.
    pub frames: Vec<Frame>,
}

/// One frame: the function and the binary it is in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frame {
    pub symbol: String,
    pub module: String,
}

impl Frame {
    /// Whether perf could not name the function.
    pub(crate) fn unresolved(&self) -> bool {
        self.symbol.is_empty() || self.symbol.starts_with("[unknown]")
    }
}

/// Read every sample of `input`, calling `each` for each; lines that are not a sample's
/// (perf's warnings) are skipped. Returns how many lines were skipped.
pub fn read(mut input: impl BufRead, mut each: impl FnMut(Sample)) -> std::io::Result<u64> {
    let mut skipped = 0;
    let mut current: Option<Sample> = None;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        buf.truncate(MAX_LINE);
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            if let Some(s) = current.take() {
                each(s);
            }
        } else if line.starts_with(['\t', ' ']) && current.is_some() {
            if let (Some(s), Some(f)) = (current.as_mut(), frame(line)) {
                s.frames.push(f);
            }
        } else {
            if let Some(s) = current.take() {
                each(s);
            }
            current = header(line);
            if current.is_none() {
                skipped += 1;
            }
        }
    }
    if let Some(s) = current.take() {
        each(s);
    }
    Ok(skipped)
}

/// `COMM PID/TID SECONDS.NANOS: PERIOD`.
fn header(line: &str) -> Option<Sample> {
    let mut rest = line.trim_end();
    let (before, period) = rest.rsplit_once(char::is_whitespace)?;
    let period: u64 = period.parse().ok()?;
    rest = before.trim_end();
    let (before, time) = rest.rsplit_once(char::is_whitespace)?;
    let time_ns = seconds_to_ns(time.strip_suffix(':')?)?;
    rest = before.trim_end();
    let (comm, ids) = rest.rsplit_once(char::is_whitespace)?;
    let (pid, tid) = ids.split_once('/')?;
    Some(Sample {
        comm: comm.trim().to_string(),
        pid: pid.parse().ok()?,
        tid: tid.parse().ok()?,
        time_ns,
        period,
        frames: Vec::new(),
    })
}

/// `123.000456789` → ns, without going through a float.
fn seconds_to_ns(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs: u64 = secs.parse().ok()?;
    let mut ns = 0u64;
    let mut scale = 100_000_000u64;
    for c in frac.chars().take(9) {
        ns += u64::from(c.to_digit(10)?) * scale;
        scale /= 10;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// `\tADDR SYMBOL (DSO)`.
fn frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (_addr, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim();
    let (symbol, module) = match module_start(rest) {
        Some(i) => (&rest[..i], &rest[i + 2..rest.len() - 1]),
        None => (rest, ""),
    };
    Some(Frame {
        symbol: clean_symbol(symbol),
        module: module_name(module),
    })
}

/// Where ` (MODULE)` begins: its bracket matched from the end, for a module may hold
/// brackets of its own (`/memfd:vmem (deleted)`, Erlang's JIT code).
fn module_start(s: &str) -> Option<usize> {
    if !s.ends_with(')') {
        return None;
    }
    let mut depth = 0i32;
    for (i, c) in s.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return (i > 0 && s[..i].ends_with(' ')).then(|| i - 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// A Rust symbol's hash suffix (`::h0123456789abcdef`) says nothing to a reader and splits
/// one function across builds: dropped.
fn clean_symbol(s: &str) -> String {
    let s = s.trim();
    match s.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head.to_string()
        }
        _ => s.to_string(),
    }
}

/// A library's file name, not its path: `libc.so.6`, `[kernel.kallsyms]`, `beam.smp`.
fn module_name(m: &str) -> String {
    if m.starts_with('[') {
        return m.to_string();
    }
    m.rsplit('/').next().unwrap_or(m).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "burn responder  5388/5390    213.847034209:    1001001 \n\
\t           32318 parse_request (/tmp/w/burn_responder)\n\
\t               0 [unknown] ([unknown])\n\
\t    7f1db639e800 __libc_start_call_main (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
\n\
beam.smp  900/901    214.5:    1001001 \n\
\tffffffff81655da7 _raw_spin_unlock_irqrestore ([kernel.kallsyms])\n\
\t 55460c0 <a as b>::run (x)::h0123456789abcdef (/usr/lib/x (y)/lib.so)\n\
\t 7f00 [unknown] (/memfd:vmem (deleted))\n\
\n\
Warning: something perf said\n";

    #[test]
    fn samples_are_read_from_the_right_end_of_their_header_and_frames_keep_their_module() {
        let mut got = Vec::new();
        let skipped = read(TEXT.as_bytes(), |s| got.push(s)).expect("in memory");
        assert_eq!(skipped, 1, "the warning line");
        assert_eq!(got.len(), 2);
        let a = &got[0];
        assert_eq!(
            (a.comm.as_str(), a.pid, a.tid, a.time_ns, a.period),
            ("burn responder", 5388, 5390, 213_847_034_209, 1_001_001)
        );
        assert_eq!(a.frames[0].symbol, "parse_request");
        assert_eq!(a.frames[0].module, "burn_responder");
        assert!(a.frames[1].unresolved());
        assert_eq!(a.frames[2].module, "libc.so.6");
        let b = &got[1];
        assert_eq!(b.time_ns, 214_500_000_000);
        assert_eq!(b.frames[0].module, "[kernel.kallsyms]");
        assert_eq!(b.frames[1].symbol, "<a as b>::run (x)");
        assert_eq!(b.frames[1].module, "lib.so");
        assert_eq!(b.frames[2].symbol, "[unknown]");
        assert_eq!(b.frames[2].module, "memfd:vmem (deleted)");
    }

    #[test]
    fn a_header_that_is_not_one_is_skipped_not_misread() {
        for bad in [
            "x 1/2 3.0: notanumber",
            "x 1-2 3.0: 5",
            "x 1/2 3.0 5",
            "x 1/2 abc: 5",
        ] {
            assert_eq!(header(bad), None, "{bad}");
        }
    }
}
