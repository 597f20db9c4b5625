//! The crate map and the code agree (issue 57): src/lib.rs and docs/layout.md draw the same
//! map of layers, it names every top-level module there is and nothing else, and every
//! `crate::` path in `src/` points down it (a module imports only modules on lower lines).
//! `rust_shape.py` finds circles; this finds an arrow that runs back up without one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The first ```text block after `start` in `text`, each line with `prefix` taken off.
fn text_block(text: &str, prefix: &str) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| {
            l.strip_prefix(prefix)
                .unwrap_or(l.trim_start_matches("//!"))
        })
        .collect();
    let open = lines
        .iter()
        .position(|l| l.trim() == "```text")
        .expect("a ```text block");
    lines[open + 1..]
        .iter()
        .take_while(|l| l.trim() != "```")
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// Each module the map names and the line it is on (0 is the top).
fn layers(block: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (i, line) in block.iter().enumerate() {
        for token in line.split_whitespace() {
            if let Some(m) = token
                .strip_suffix('/')
                .or_else(|| token.strip_suffix(".rs"))
            {
                assert!(
                    out.insert(m.to_string(), i).is_none(),
                    "{m} is on two lines of the map"
                );
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src folder").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn lib_rs_and_the_layout_page_draw_one_map_of_every_module() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let page = std::fs::read_to_string(root().join("docs/layout.md")).expect("docs/layout.md");
    let from_lib = text_block(&lib, "//! ");
    let from_page = text_block(&page, "");
    assert_eq!(
        from_lib, from_page,
        "src/lib.rs's map and docs/layout.md's first text block differ: draw them alike"
    );
    let mapped: Vec<String> = layers(&from_lib).into_keys().collect();
    let mut declared: Vec<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    declared.sort();
    assert_eq!(
        mapped, declared,
        "the map names other modules than src/lib.rs declares"
    );
}

/// The top-level names a line of code reaches through `crate::`: `crate::a::b`, each of
/// `crate::{a::x, b}`, and the macros' `$crate::a` (a macro defined in a module is that
/// module's dependency wherever it is used, so its body counts where it is written).
fn crate_paths(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            // Only the first segment of each item names a top-level module.
            let mut depth = 0;
            let mut item = String::new();
            for c in inner.chars().chain(std::iter::once(',')) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// Each macro the crate exports, and the module its definition is in.
fn macro_homes(files: &[PathBuf]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(f).expect("source");
        let rel = f.strip_prefix(root().join("src")).expect("under src");
        let top = top_module(rel);
        for line in text.lines() {
            if let Some(rest) = line.trim_start().strip_prefix("macro_rules! ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name, top.clone());
            }
        }
    }
    out
}

fn top_module(rel: &Path) -> String {
    rel.components()
        .next()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .unwrap_or_default()
}

#[test]
fn every_crate_path_in_src_points_down_the_map() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let layer = layers(&text_block(&lib, "//! "));
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let macros = macro_homes(&files);
    let mut up = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root().join("src")).expect("under src");
        let top = rel
            .components()
            .next()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .unwrap_or_default();
        // The binary and the crate root stand above the map.
        let Some(&own) = layer.get(&top) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).expect("source");
        for (n, line) in text.lines().enumerate() {
            // Comments and doc links name modules; only code imports them.
            let code = line.split("//").next().unwrap_or("");
            for name in crate_paths(code) {
                // `crate::say!` depends on the module that defines `say!`.
                let is_macro = code.contains(&format!("crate::{name}!"));
                let name = match macros.get(&name) {
                    Some(home) if is_macro => home.clone(),
                    _ => name,
                };
                match layer.get(&name) {
                    Some(&other) if name != top && other <= own => up.push(format!(
                        "src/{}:{}: {top} (line {own} of the map) uses crate::{name} (line {other})",
                        rel.display(),
                        n + 1
                    )),
                    _ => {}
                }
            }
        }
    }
    assert!(
        up.is_empty(),
        "imports that run up the map or across its line:\n{}",
        up.join("\n")
    );
}

#[test]
fn every_error_type_in_src_declares_its_exit_code_and_is_asked_for_it() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let exit = std::fs::read_to_string(root().join("src/exit.rs")).expect("src/exit.rs");
    let mut missing = Vec::new();
    for f in files {
        let whole = std::fs::read_to_string(&f).expect("source");
        // A test module's error types are the tests' own (and at a file's end).
        let text = whole.split("#[cfg(test)]\nmod ").next().unwrap_or("");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains("thiserror::Error") || line.trim_start().starts_with("use ") {
                continue;
            }
            // The type the derive is on: the next `enum` or `struct` line.
            let Some(name) = lines[i + 1..].iter().find_map(|l| {
                let l = l.trim_start();
                let l = l
                    .strip_prefix("pub(crate) ")
                    .or_else(|| l.strip_prefix("pub "))
                    .unwrap_or(l);
                l.strip_prefix("enum ")
                    .or_else(|| l.strip_prefix("struct "))
                    .map(|rest| {
                        rest.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect::<String>()
                    })
            }) else {
                continue;
            };
            let declared = whole.contains(&format!("usage_error!({name})"))
                || whole.contains(&format!("runtime_error!({name})"))
                || whole.contains(&format!("Classified for {name}"));
            let asked = exit.contains(&format!("::{name}>"));
            if !(declared && asked) {
                missing.push(format!(
                    "{} {name}: {}{}",
                    f.display(),
                    if declared {
                        ""
                    } else {
                        "declares no exit code (usage_error!/runtime_error!) "
                    },
                    if asked {
                        ""
                    } else {
                        "is not in src/exit.rs's CLASSES"
                    }
                ));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
