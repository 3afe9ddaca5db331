//! Records the source tree's git commit in the extension (`_core.build_commit()`),
//! so that a kernel run can say which ccarena made it. "unknown" outside a git
//! checkout (a source archive); "+" after the commit when files differed from it.

use std::path::Path;
use std::process::Command;

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Rebuilt when a commit is made or a source changes (for the "+").
    for p in [
        ".git/HEAD",
        ".git/index",
        "python",
        "crates/sim/src",
        "crates/emu/src",
        "crates/py/src",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    let commit = match git(&root, &["rev-parse", "HEAD"]) {
        Some(c) if !c.is_empty() => {
            let dirty = git(&root, &["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c}+")
            } else {
                c
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=CCARENA_BUILD_COMMIT={commit}");
}
