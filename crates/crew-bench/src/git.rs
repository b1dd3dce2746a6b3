//! `crew-bench git`: a teammate's worktree life on a big repository, crew against the git CLI.
//!
//! A synthetic repository of N files (source-like text of realistic sizes, nested folders) is
//! committed on `main`. Then, for crew (`git::Worktrees`) and for the git CLI when it is
//! installed, on the same repository one after the other: create a worktree, change M files in
//! it (most edited, some added, some deleted), diff it, commit and fast-forward `main` (the main
//! checkout's files included), discard it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::json;

use crew_git::{Author, Worktrees, exclude_from_git};

/// Files per folder, and sub-folders per folder: a tree a few levels deep, like a real project.
const FILES_PER_DIR: usize = 20;
const FANOUT: usize = 8;
const BASE: &str = "main";

/// Which files a round changes: `changed` of `files`, every `files / changed`-th from `offset`.
#[derive(Clone, Copy)]
struct Share {
    files: usize,
    changed: usize,
    offset: usize,
}

#[derive(Debug, Clone, Serialize)]
struct Timings {
    worktree_ms: f64,
    diff_ms: f64,
    merge_ms: f64,
    discard_ms: f64,
}

/// What `crew-bench git` is asked to measure.
#[derive(clap::Args)]
pub struct GitBench {
    #[arg(long, default_value_t = 20_000)]
    files: usize,
    #[arg(long, default_value_t = 2_000)]
    changed: usize,
    /// Rounds of each side (alternating which goes first); the report gives medians.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Files in the `node_modules`-like folder linked by `[worktree] link`.
    #[arg(long, default_value_t = 50_000)]
    node_modules: usize,
    /// Size in MB of the file copied by `[worktree] copy`.
    #[arg(long, default_value_t = 100)]
    copy_mb: usize,
    /// Folder for the scratch repository (default: the system's temporary folder).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub fn run(bench: GitBench) -> anyhow::Result<()> {
    let GitBench {
        files,
        changed,
        rounds,
        node_modules,
        copy_mb,
        dir,
        json: as_json,
    } = bench;
    if files == 0 || rounds == 0 {
        bail!("--files and --rounds must be at least 1");
    }
    // Each round of each side changes its own files (earlier rounds' deletions are on `main`).
    let sides = if git_installed() { 2 } else { 1 };
    if changed * sides * rounds > files {
        bail!(
            "--changed ({changed}) times {} (rounds x sides) cannot exceed --files ({files})",
            sides * rounds
        );
    }
    let scratch = match &dir {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .context("creating a scratch folder")?;
    let root = scratch.path().join("repo");
    let built = Instant::now();
    make_repo(&root, files)?;
    let build_secs = built.elapsed().as_secs_f64();

    let mut crew_runs = Vec::new();
    let mut git_runs = Vec::new();
    for round in 0..rounds {
        let share = |side: usize| Share {
            files,
            changed,
            offset: round * sides + side,
        };
        // Alternating who goes first, so neither always finds the caches the other warmed.
        if round % 2 == 1 && sides == 2 {
            git_runs.push(git_round(&root, share(1))?);
            crew_runs.push(crew_round(&root, share(0))?);
        } else {
            crew_runs.push(crew_round(&root, share(0))?);
            if sides == 2 {
                git_runs.push(git_round(&root, share(1))?);
            }
        }
    }
    // Each round on stderr, to judge how far the medians can be trusted on a busy machine.
    for (round, (ours, theirs)) in crew_runs.iter().zip(git_runs.iter()).enumerate() {
        eprintln!("round {round}: crew {ours:?}; git {theirs:?}");
    }
    let crew = median(&crew_runs);
    let git = (sides == 2).then(|| median(&git_runs));
    let provision = provision_round(&root, node_modules, copy_mb)?;
    let report = json!({
        "files": files,
        "changed": changed,
        "rounds": rounds,
        "crew": crew,
        "git": git,
        "provision": provision,
    });
    if as_json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "repository: {files} files, built in {build_secs:.1} s; {changed} changed; median of {rounds} round(s)"
    );
    println!(
        "{:<12} {:>10} {:>10} {:>10}",
        "", "crew ms", "git ms", "ratio"
    );
    let rows = [
        (
            "worktree",
            crew.worktree_ms,
            git.as_ref().map(|g| g.worktree_ms),
        ),
        ("diff", crew.diff_ms, git.as_ref().map(|g| g.diff_ms)),
        ("merge", crew.merge_ms, git.as_ref().map(|g| g.merge_ms)),
        (
            "discard",
            crew.discard_ms,
            git.as_ref().map(|g| g.discard_ms),
        ),
    ];
    for (what, ours, theirs) in rows {
        match theirs {
            Some(t) => println!("{what:<12} {ours:>10.1} {t:>10.1} {:>10.2}", ours / t),
            None => println!("{what:<12} {ours:>10.1} {:>10} {:>10}", "-", "-"),
        }
    }
    println!(
        "[worktree] link of node_modules ({} files): {:.1} ms; copy of a {} MB file: {:.1} ms",
        provision.node_modules_files, provision.link_ms, copy_mb, provision.copy_ms
    );
    Ok(())
}

/// `[worktree] link` and `copy` on a fresh worktree: a `node_modules`-like folder (nested
/// packages of small files) linked, one big untracked file copied.
#[derive(Debug, Serialize)]
struct Provision {
    node_modules_files: usize,
    link_ms: f64,
    copy_bytes: u64,
    copy_ms: f64,
}

fn provision_round(root: &Path, node_modules: usize, copy_mb: usize) -> anyhow::Result<Provision> {
    let mut rng = fastrand::Rng::with_seed(11);
    for i in 0..node_modules {
        let path = root.join(format!(
            "node_modules/pkg{}/lib/sub{}/m{i}.js",
            i / 200,
            i % 7
        ));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let size = rng.usize(200..4000);
        std::fs::write(&path, "x".repeat(size))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let big = root.join("fixtures.db");
    let bytes = vec![7u8; copy_mb * 1024 * 1024];
    std::fs::write(&big, &bytes).with_context(|| format!("writing {}", big.display()))?;

    let name = "bench-provision";
    let worktrees = Worktrees::open(root)?;
    worktrees.ensure(name, BASE, &[], &[])?;
    // On an existing worktree `ensure` only provisions what is missing: these time just that.
    let link = ["node_modules".to_string()];
    let (link_ms, linked) = timed(|| worktrees.ensure(name, BASE, &[], &link))?;
    let copy = ["fixtures.db".to_string()];
    let (copy_ms, copied) = timed(|| worktrees.ensure(name, BASE, &copy, &[]))?;
    if linked.linked != link || copied.copied != copy {
        bail!("provisioning skipped something: {linked:?} {copied:?}");
    }
    worktrees.discard(name)?;
    Ok(Provision {
        node_modules_files: node_modules,
        link_ms,
        copy_bytes: bytes.len() as u64,
        copy_ms,
    })
}

fn crew_round(root: &Path, share: Share) -> anyhow::Result<Timings> {
    let name = "bench-crew";
    let worktrees = Worktrees::open(root)?;
    let (worktree_ms, wt) = timed(|| worktrees.ensure(name, BASE, &[], &[]))?;
    change_files(&wt.path, share, name)?;
    let (diff_ms, diff) = timed(|| worktrees.diff(name, BASE))?;
    if diff.totals.files != share.changed {
        bail!(
            "crew's diff shows {} files, {} were changed",
            diff.totals.files,
            share.changed
        );
    }
    let author = Author::new("bench", "bench@crew.invalid");
    let (merge_ms, _) = timed(|| worktrees.merge(name, BASE, &author))?;
    let (discard_ms, ()) = timed(|| worktrees.discard(name))?;
    Ok(Timings {
        worktree_ms,
        diff_ms,
        merge_ms,
        discard_ms,
    })
}

/// The same steps with the git CLI: `worktree add`, `status` + `diff`, `add -A` + `commit` +
/// `merge --ff-only`, `worktree remove` + `branch -D`.
fn git_round(root: &Path, share: Share) -> anyhow::Result<Timings> {
    let name = "bench-git";
    let path = root.join(".worktrees").join(name);
    let rel = format!(".worktrees/{name}");
    let (worktree_ms, _) = timed(|| git(root, &["worktree", "add", "-q", "-b", name, &rel, BASE]))?;
    change_files(&path, share, name)?;
    let (diff_ms, _) = timed(|| {
        git(&path, &["status", "--porcelain"])?;
        git(&path, &["diff", "HEAD"])
    })?;
    let (merge_ms, _) = timed(|| {
        git(&path, &["add", "-A"])?;
        git(&path, &["commit", "-q", "-m", "bench"])?;
        git(root, &["merge", "-q", "--ff-only", name])
    })?;
    let (discard_ms, _) = timed(|| {
        git(root, &["worktree", "remove", "--force", &rel])?;
        git(root, &["branch", "-q", "-D", name])
    })?;
    Ok(Timings {
        worktree_ms,
        diff_ms,
        merge_ms,
        discard_ms,
    })
}

/// Times `f`, after flushing what earlier steps wrote, so no step pays for another's write-back.
fn timed<T, E>(f: impl FnOnce() -> Result<T, E>) -> Result<(f64, T), E> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    let start = Instant::now();
    let value = f()?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    Ok(((ms * 10.0).round() / 10.0, value))
}

/// Each step's median over the rounds.
fn median(runs: &[Timings]) -> Timings {
    let of = |step: fn(&Timings) -> f64| {
        let mut values: Vec<f64> = runs.iter().map(step).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Timings {
        worktree_ms: of(|t| t.worktree_ms),
        diff_ms: of(|t| t.diff_ms),
        merge_ms: of(|t| t.merge_ms),
        discard_ms: of(|t| t.discard_ms),
    }
}

fn git_installed() -> bool {
    Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs git in `dir`; its output is read and dropped, as a caller would consume it.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@crew.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "git {} failed in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Where file `i` lives: folders of `FILES_PER_DIR` files, numbered into a tree `FANOUT` wide
/// (`src/d3/d5/d1/f00123.rs`), so a bigger repository is also a deeper one.
fn file_path(i: usize) -> PathBuf {
    let mut folder = i / FILES_PER_DIR;
    let mut parts = Vec::new();
    while folder > 0 {
        parts.push(format!("d{}", folder % FANOUT));
        folder /= FANOUT;
    }
    let ext = ["rs", "ts", "py", "md", "json"][i % 5];
    let mut path = PathBuf::from("src");
    for part in parts.iter().rev() {
        path.push(part);
    }
    path.push(format!("f{i:06}.{ext}"));
    path
}

/// Source-like text: mostly 1–6 KB, now and then 20–60 KB, every file different.
fn content(i: usize, rng: &mut fastrand::Rng) -> String {
    let lines = if rng.u8(..) < 8 {
        rng.usize(500..1500)
    } else {
        rng.usize(25..150)
    };
    let mut text = format!("// file {i}\n");
    for line in 0..lines {
        let indent = "    ".repeat(rng.usize(0..4));
        let word = ["let", "fn", "if", "return", "match", "for", "use", "pub"][rng.usize(0..8)];
        text.push_str(&format!(
            "{indent}{word} value_{line}_{} = compute({}, \"{}\");\n",
            rng.u32(..),
            rng.u16(..),
            rng.alphanumeric()
        ));
    }
    text
}

/// Writes and commits the synthetic repository on `main` (git2, so it needs no git CLI).
fn make_repo(root: &Path, files: usize) -> anyhow::Result<()> {
    let mut rng = fastrand::Rng::with_seed(7);
    for i in 0..files {
        let path = root.join(file_path(i));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, content(i, &mut rng))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head(BASE);
    let repo = git2::Repository::init_opts(root, &opts).context("creating the repository")?;
    exclude_from_git(root, &[".worktrees"])?;
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::now("bench", "bench@crew.invalid")?;
    repo.commit(Some("HEAD"), &sig, &sig, "synthetic repository", &tree, &[])?;
    Ok(())
}

/// Changes the round's share of files in the checkout at `dir`: nine in ten edited (a line
/// replaced, one appended), the rest half deleted, half added beside the chosen file.
fn change_files(dir: &Path, share: Share, tag: &str) -> anyhow::Result<()> {
    if share.changed == 0 {
        return Ok(());
    }
    let step = share.files / share.changed;
    for k in 0..share.changed {
        let rel = file_path(k * step + share.offset);
        let path = dir.join(&rel);
        match k % 20 {
            0 => std::fs::remove_file(&path)
                .with_context(|| format!("deleting {}", path.display()))?,
            1 => {
                let added = path.with_extension(format!("{tag}.new.rs"));
                std::fs::write(&added, format!("// added by {tag}\nfn added_{k}() {{}}\n"))
                    .with_context(|| format!("writing {}", added.display()))?;
            }
            _ => {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let mut lines: Vec<&str> = text.lines().collect();
                let middle = lines.len() / 2;
                let edited = format!("    let edited_by_{} = {k};", tag.replace('-', "_"));
                lines[middle] = &edited;
                let mut out = lines.join("\n");
                out.push_str(&format!("\n// {tag} was here\n"));
                std::fs::write(&path, out)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(())
}
