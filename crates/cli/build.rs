//! Puts the commit the binary was built from into `--version`, when there is one: a build
//! from a source archive or the crates.io package has no git and shows the version alone.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let full = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) => {
            let date = git(&["log", "-1", "--format=%cs", "HEAD"]);
            let mut described = format!("{version} (commit {commit}");
            if let Some(date) = date {
                described.push_str(&format!(", {date}"));
            }
            described.push(')');
            described
        }
        None => version.to_owned(),
    };
    println!("cargo:rustc-env=OFCONVERT_VERSION={full}");
    // A new commit or checkout moves HEAD's reflog; without git nothing needs watching.
    for path in ["HEAD", "logs/HEAD"] {
        if let Some(path) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
