//! Tidy tests: the test-suite also checks the codebase itself (rust-analyzer's habit). They
//! run as this crate's unit tests, so `cargo test --workspace` includes them.

#[cfg(test)]
mod tests {
    use crate::util::root;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    fn crate_dirs() -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("Cargo.toml").exists())
            .collect();
        v.sort();
        assert!(!v.is_empty());
        v
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    #[test]
    fn every_crate_has_metadata_readme_changelog_and_docs() {
        for dir in crate_dirs() {
            let name = dir.display();
            let manifest = read(&dir.join("Cargo.toml"));
            for key in ["version = ", "description = ", "readme = ", "license"] {
                assert!(manifest.contains(key), "{name}/Cargo.toml lacks {key}");
            }
            let readme = read(&dir.join("README.md"));
            assert!(readme.lines().count() >= 3, "{name}/README.md is too thin");
            let changelog = read(&dir.join("CHANGELOG.md"));
            assert!(
                changelog.contains("\n## "),
                "{name}/CHANGELOG.md has no section"
            );
            let lib = dir.join("src/lib.rs");
            if lib.exists() {
                let src = read(&lib);
                assert!(
                    src.starts_with("//!"),
                    "{name}/src/lib.rs must open with crate docs"
                );
                assert!(
                    src.contains("missing_docs"),
                    "{name}/src/lib.rs must deny missing_docs"
                );
                assert!(
                    src.contains("```"),
                    "{name}/src/lib.rs crate docs need an example"
                );
            }
        }
    }

    #[test]
    fn no_stubs_or_debug_macros_in_library_code() {
        let mut files = Vec::new();
        rust_files(&root().join("crates"), &mut files);
        rust_files(&root().join("xtask/src"), &mut files);
        let banned = [
            concat!("todo", "!("),
            concat!("unimplemented", "!("),
            concat!("dbg", "!("),
        ];
        for f in files {
            let src = read(&f);
            for b in banned {
                assert!(!src.contains(b), "{} contains {b}", f.display());
            }
        }
    }

    #[test]
    fn readme_and_architecture_name_every_crate() {
        let readme = read(&root().join("README.md"));
        let arch = read(&root().join("ARCHITECTURE.md"));
        for dir in crate_dirs() {
            let folder = dir.file_name().unwrap().to_str().unwrap().to_string();
            let needle = format!("crates/{folder}");
            assert!(
                readme.contains(&needle),
                "README.md's crate table lacks {needle}"
            );
            assert!(
                arch.contains(&format!("{folder}/")),
                "ARCHITECTURE.md's code map lacks {folder}/"
            );
        }
    }

    /// Folders that hold no sources of ours: build output, VCS data, fuzz corpora.
    fn skipped_dir(name: &str) -> bool {
        name.starts_with('.')
            || matches!(
                name,
                "target" | "node_modules" | "corpus" | "artifacts" | "coverage"
            )
    }

    /// Every text file of the project that may cite a document, and the base name of every
    /// Markdown file in it.
    fn text_files(dir: &Path, files: &mut Vec<PathBuf>, md_names: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !skipped_dir(&name) {
                    text_files(&p, files, md_names);
                }
                continue;
            }
            let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
            if ext == "md" {
                md_names.insert(name);
            }
            if matches!(
                ext,
                "rs" | "md" | "toml" | "py" | "sh" | "txt" | "yml" | "yaml"
            ) {
                files.push(p);
            }
        }
    }

    /// A cited document: `path` as written, and the section (`§N` or `§N.M`) cited right
    /// after it, if any.
    #[derive(Debug, PartialEq)]
    struct DocRef {
        path: String,
        section: Option<String>,
    }

    /// The Markdown documents `text` cites by file name (`README.md`, `docs/src/format.md
    /// §5`). Globs (`*.md`), names built at run time (`{x}.md`), URLs and paths inside other
    /// repositories (`owner/repo@commit:path.md`) are not references to this repository.
    fn doc_refs(text: &str) -> Vec<DocRef> {
        let is_path = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
        let mut out = Vec::new();
        for (at, _) in text.match_indices(".md") {
            let after = &text[at + 3..];
            if after
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                continue; // `.mdx`, `.md_old`, ...
            }
            let before = &text[..at];
            let start = before
                .char_indices()
                .rev()
                .take_while(|&(_, c)| is_path(c))
                .last()
                .map_or(at, |(i, _)| i);
            let stem = &text[start..at];
            if stem.is_empty() || stem.ends_with('/') || stem.ends_with('.') {
                continue;
            }
            let word_start = before[..start]
                .rfind(char::is_whitespace)
                .map_or(0, |i| i + 1);
            let lead = &text[word_start..start];
            if lead.ends_with(['*', '}', ':', '@', '$']) || lead.contains("://") {
                continue;
            }
            let section = after
                .trim_start_matches('`')
                .trim_start()
                .strip_prefix('§')
                .map(|s| {
                    let n: String = s
                        .chars()
                        .take_while(|c| c.is_ascii_digit() || *c == '.')
                        .collect();
                    n.trim_end_matches('.').to_owned()
                })
                .filter(|n| !n.is_empty());
            out.push(DocRef {
                path: format!("{stem}.md"),
                section,
            });
        }
        out
    }

    /// The section numbers of a Markdown document's headings (`## 5. Framing` → `5`,
    /// `### 2.1 Steps` → `2.1`).
    fn section_numbers(doc: &str) -> BTreeSet<String> {
        doc.lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|l| l.trim_start_matches('#').trim())
            .filter_map(|l| l.split_whitespace().next())
            .map(|n| n.trim_end_matches('.').to_owned())
            .filter(|n| n.starts_with(|c: char| c.is_ascii_digit()))
            .collect()
    }

    #[test]
    fn doc_refs_finds_names_paths_and_sections() {
        // Built with concat! so that this file does not cite these names itself.
        let text = concat!(
            "see GONE.",
            "md §5, (`docs/src/semantics.",
            "md` §8.3–8.4), ../README.",
            "md's map, docs/src/*.md, {name}.md, https://x.org/a/b.",
            "md, o/r@c:doc/x.",
            "md, a.mdx"
        );
        assert_eq!(
            doc_refs(text),
            vec![
                DocRef {
                    path: concat!("GONE.", "md").into(),
                    section: Some("5".into())
                },
                DocRef {
                    path: "docs/src/semantics.md".into(),
                    section: Some("8.3".into())
                },
                DocRef {
                    path: concat!("../README.", "md").into(),
                    section: None
                },
            ]
        );
        let doc = "# Title\n## 1. One\n### 1.2 Two\n## Notes\n";
        let got: Vec<String> = section_numbers(doc).into_iter().collect();
        assert_eq!(got, ["1", "1.2"]);
    }

    /// Comments and docs cite the format, semantics and rules pages by path and section;
    /// a citation of a document that is not in the repository (as the contract documents
    /// once were: they lived outside, where a clone does not have them) or of a section that
    /// page lacks fails here.
    #[test]
    fn every_cited_document_and_section_exists() {
        let root = root();
        let mut files = Vec::new();
        let mut md_names = BTreeSet::new();
        text_files(&root, &mut files, &mut md_names);
        let mut missing = Vec::new();
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue; // not UTF-8: not a document that cites others
            };
            let dir = file.parent().unwrap_or(&root);
            let shown = file.strip_prefix(&root).unwrap_or(file).display();
            for (n, line_text) in text.lines().enumerate() {
                let shown = format!("{shown}:{}", n + 1);
                for r in doc_refs(line_text) {
                    let target = if r.path.contains('/') {
                        [dir.join(&r.path), root.join(&r.path)]
                            .into_iter()
                            .find(|p| p.is_file())
                    } else if md_names.contains(&r.path) {
                        Some(dir.join(&r.path)).filter(|p| p.is_file())
                    } else {
                        missing.push(format!("{shown}: {} is not in the repository", r.path));
                        continue;
                    };
                    let Some(section) = &r.section else {
                        if r.path.contains('/') && target.is_none() {
                            missing.push(format!("{shown}: {} does not exist", r.path));
                        }
                        continue;
                    };
                    match target {
                        None => missing.push(format!("{shown}: {} does not exist", r.path)),
                        Some(t) => {
                            if !section_numbers(&read(&t)).contains(section) {
                                missing
                                    .push(format!("{shown}: {} has no section {section}", r.path));
                            }
                        }
                    }
                }
            }
        }
        assert!(
            missing.is_empty(),
            "references to documents that do not exist (docs live in docs/src/):\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn ci_runs_exactly_the_readme_test_command() {
        let readme = read(&root().join("README.md"));
        let ci = read(&root().join(".ci/run"));
        assert!(readme.contains("cargo xtask test"));
        assert!(ci.lines().any(|l| l.trim() == "cargo xtask test"));
    }

    /// The `mod NAME;` declarations of a Rust file (one per line, as rustfmt writes them).
    fn declared_modules(src: &str) -> BTreeSet<String> {
        src.lines()
            .filter_map(|l| l.trim().strip_prefix("mod "))
            .filter_map(|rest| rest.strip_suffix(';'))
            .map(str::to_owned)
            .collect()
    }

    /// One integration-test binary per crate: each links the crate's whole dependency tree
    /// again. A crate with several test files turns `autotests` off and declares one
    /// `[[test]]` whose root names every file as a module (a second one only where a test
    /// must run in a process of its own, saying why), and no file is left out of every
    /// binary without anyone noticing.
    #[test]
    fn each_crate_links_one_integration_test_binary() {
        let mut problems = Vec::new();
        for dir in crate_dirs() {
            let tests = dir.join("tests");
            let mut files: Vec<String> = std::fs::read_dir(&tests)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
                .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
                .collect();
            files.sort();
            if files.len() <= 1 {
                continue;
            }
            let name = dir.display();
            let manifest = read(&dir.join("Cargo.toml"));
            let roots: Vec<&str> = manifest
                .split("[[test]]")
                .skip(1)
                .filter_map(|t| t.lines().find_map(|l| l.trim().strip_prefix("path = ")))
                .map(|p| p.trim_matches('"'))
                .collect();
            if !manifest.contains("autotests = false") || roots.is_empty() {
                problems.push(format!(
                    "{name}: {} test files; set `autotests = false` and one [[test]] (found {})",
                    files.len(),
                    roots.len()
                ));
                continue;
            }
            let mut covered = BTreeSet::new();
            for root_path in &roots {
                let file = dir.join(root_path);
                covered.insert(file.file_stem().unwrap().to_string_lossy().into_owned());
                covered.extend(declared_modules(&read(&file)));
            }
            for f in &files {
                if !covered.contains(f) {
                    problems.push(format!("{name}: tests/{f}.rs is in no test binary"));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
