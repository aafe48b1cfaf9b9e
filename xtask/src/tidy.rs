//! Tidy tests: the test-suite also checks the codebase itself (rust-analyzer's habit). They
//! run as this crate's unit tests, so `cargo test --workspace` includes them.

#[cfg(test)]
mod tests {
    use crate::util::root;
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

    #[test]
    fn ci_runs_exactly_the_readme_test_command() {
        let readme = read(&root().join("README.md"));
        let ci = read(&root().join(".ci/run"));
        assert!(readme.contains("cargo xtask test"));
        assert!(ci.lines().any(|l| l.trim() == "cargo xtask test"));
    }
}
