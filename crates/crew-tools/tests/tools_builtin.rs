//! The core file tools, called directly: read, write, edit, glob, grep, and path confinement.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_test_support::tools::Fixture;
use crew_tools::builtin::{EditTool, GlobTool, GrepTool, ReadTool, WriteTool};
use crew_tools::{Tool, ToolContext, ToolError, ToolJson, ToolOutput};
use serde_json::{Value, json};

async fn run(tool: &dyn Tool, input: Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
    tool.validate_json(&input, ctx)?;
    tool.call_json(&input, ctx.clone())
        .await
        .map_err(|e: ToolError| e.to_string())
}

#[tokio::test]
async fn read_numbers_lines_and_pages() {
    let fx = Fixture::new();
    fx.write("a.txt", "one\ntwo\nthree\n");
    let out = run(&ReadTool, json!({"path": "a.txt"}), &fx.ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "     1\tone\n     2\ttwo\n     3\tthree\n");
    let page = run(
        &ReadTool,
        json!({"path": "a.txt", "offset": 2, "limit": 1}),
        &fx.ctx,
    )
    .await
    .unwrap();
    assert_eq!(
        page.content,
        "     2\ttwo\n… 1 more lines; continue with offset 3\n"
    );
    assert!(
        run(&ReadTool, json!({"path": "missing.txt"}), &fx.ctx)
            .await
            .is_err()
    );
    assert!(
        run(&ReadTool, json!({"path": "."}), &fx.ctx)
            .await
            .unwrap_err()
            .contains("directory")
    );
}

#[tokio::test]
async fn read_refuses_binary_files() {
    let fx = Fixture::new();
    std::fs::write(fx.ws().join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
    let err = run(&ReadTool, json!({"path": "blob.bin"}), &fx.ctx)
        .await
        .unwrap_err();
    assert!(err.contains("binary"), "{err}");
}

#[tokio::test]
async fn write_creates_directories() {
    let fx = Fixture::new();
    let out = run(
        &WriteTool,
        json!({"path": "deep/er/new.txt", "content": "hi"}),
        &fx.ctx,
    )
    .await
    .unwrap();
    assert_eq!(out.content, "wrote 2 bytes to deep/er/new.txt");
    assert_eq!(
        std::fs::read_to_string(fx.ws().join("deep/er/new.txt")).unwrap(),
        "hi"
    );
}

/// `write` over an existing file, like `edit`, needs a read in this session and no change since.
#[tokio::test]
async fn write_over_an_existing_file_requires_a_fresh_read() {
    let fx = Fixture::new();
    fx.write("a.txt", "theirs\n");
    let write = |content: &str| json!({"path": "a.txt", "content": content});
    let err = run(&WriteTool, write("mine\n"), &fx.ctx).await.unwrap_err();
    assert_eq!(
        err,
        "a.txt has not been read in this session; read it before overwriting it"
    );
    assert_eq!(
        std::fs::read_to_string(fx.ws().join("a.txt")).unwrap(),
        "theirs\n"
    );

    run(&ReadTool, json!({"path": "a.txt"}), &fx.ctx)
        .await
        .unwrap();
    fx.write("a.txt", "changed behind the agent's back\n");
    let err = run(&WriteTool, write("mine\n"), &fx.ctx).await.unwrap_err();
    assert!(err.contains("changed since it was last read"), "{err}");

    run(&ReadTool, json!({"path": "a.txt"}), &fx.ctx)
        .await
        .unwrap();
    run(&WriteTool, write("mine\n"), &fx.ctx).await.unwrap();
    // Its own write counts as knowing the file: a second write needs no re-read.
    run(&WriteTool, write("mine again\n"), &fx.ctx)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.ws().join("a.txt")).unwrap(),
        "mine again\n"
    );
}

/// The check is made again when the call runs: a change after validation still refuses.
#[tokio::test]
async fn write_refuses_changes_made_between_validation_and_call() {
    let fx = Fixture::new();
    fx.write("a.txt", "one\n");
    run(&ReadTool, json!({"path": "a.txt"}), &fx.ctx)
        .await
        .unwrap();
    let input = json!({"path": "a.txt", "content": "two\n"});
    WriteTool.validate_json(&input, &fx.ctx).unwrap();
    fx.write("a.txt", "someone else\n");
    let err = WriteTool
        .call_json(&input, fx.ctx.clone())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("changed since it was last read"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.ws().join("a.txt")).unwrap(),
        "someone else\n"
    );
}

/// A page of long lines stops at 100 KiB and says where to continue; paging on reaches the end.
#[tokio::test]
async fn read_caps_bytes_and_says_how_to_page() {
    let fx = Fixture::new();
    let line = "x".repeat(1_000);
    let text: String = (0..300).map(|_| format!("{line}\n")).collect();
    fx.write("wide.txt", &text);
    let first = run(&ReadTool, json!({"path": "wide.txt"}), &fx.ctx)
        .await
        .unwrap()
        .content;
    assert!(first.len() <= 100 * 1024 + 200, "{}", first.len());
    let tail = first.lines().last().unwrap();
    assert!(
        tail.starts_with("… output capped at 102400 bytes;"),
        "{tail}"
    );
    let next: usize = tail.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(
        first.lines().count(),
        next,
        "every shown line plus the note"
    );
    // Paging on from each note reaches the last line, every line shown once.
    let (mut offset, mut shown) = (next, next - 1);
    loop {
        let page = run(
            &ReadTool,
            json!({"path": "wide.txt", "offset": offset}),
            &fx.ctx,
        )
        .await
        .unwrap()
        .content;
        let numbered = page.lines().filter(|l| !l.starts_with('…')).count();
        shown += numbered;
        match page.lines().last().unwrap().strip_prefix("… output capped") {
            Some(note) => offset = note.rsplit(' ').next().unwrap().parse().unwrap(),
            None => {
                assert!(page.ends_with(&format!("   300\t{line}\n")));
                break;
            }
        }
    }
    assert_eq!(shown, 300);
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused() {
    let fx = Fixture::new();
    let outside = fx.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(&outside, fx.ws().join("escape")).unwrap();
    let abs = outside.join("secret.txt");
    for path in [
        "../outside/secret.txt",
        abs.to_str().unwrap(),
        "escape/secret.txt",
        "/etc/passwd",
    ] {
        let err = run(&ReadTool, json!({"path": path}), &fx.ctx)
            .await
            .unwrap_err();
        assert!(
            err.contains("outside the workspace") || err.contains("symbolic link"),
            "{path}: {err}"
        );
        let err = run(&WriteTool, json!({"path": path, "content": "x"}), &fx.ctx)
            .await
            .unwrap_err();
        assert!(
            err.contains("outside the workspace") || err.contains("symbolic link"),
            "{path}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "s"
    );
    // The call itself re-checks, for callers that skip validation.
    let err = WriteTool
        .call_json(
            &json!({"path": "../outside/x", "content": "x"}),
            fx.ctx.clone(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("outside the workspace"));
    assert!(!outside.join("x").exists());
}

#[tokio::test]
async fn edit_requires_a_fresh_read() {
    let fx = Fixture::new();
    let path = fx.write("f.txt", "alpha beta\n");
    let edit = json!({"path": "f.txt", "old_string": "alpha", "new_string": "gamma"});

    let err = run(&EditTool, edit.clone(), &fx.ctx).await.unwrap_err();
    assert!(err.contains("has not been read"), "{err}");

    run(&ReadTool, json!({"path": "f.txt"}), &fx.ctx)
        .await
        .unwrap();
    std::fs::write(&path, "alpha beta changed\n").unwrap();
    let err = run(&EditTool, edit.clone(), &fx.ctx).await.unwrap_err();
    assert!(err.contains("changed since"), "{err}");

    // A change that keeps the length (and maybe the mtime tick) is still seen.
    run(&ReadTool, json!({"path": "f.txt"}), &fx.ctx)
        .await
        .unwrap();
    std::fs::write(&path, "alpha beta chaNged\n").unwrap();
    let err = run(&EditTool, edit.clone(), &fx.ctx).await.unwrap_err();
    assert!(err.contains("changed since"), "{err}");
    std::fs::write(&path, "alpha beta changed\n").unwrap();

    run(&ReadTool, json!({"path": "f.txt"}), &fx.ctx)
        .await
        .unwrap();
    let out = run(&EditTool, edit, &fx.ctx).await.unwrap();
    assert_eq!(out.content, "edited f.txt: 1 replacement");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "gamma beta changed\n"
    );

    // Its own write keeps the file fresh: a second edit needs no new read.
    let again = json!({"path": "f.txt", "old_string": "beta", "new_string": "delta"});
    run(&EditTool, again, &fx.ctx).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "gamma delta changed\n"
    );
}

#[tokio::test]
async fn edit_refuses_changes_made_between_validation_and_call() {
    let fx = Fixture::new();
    let path = fx.write("f.txt", "x = 1\n");
    run(&ReadTool, json!({"path": "f.txt"}), &fx.ctx)
        .await
        .unwrap();
    let edit = json!({"path": "f.txt", "old_string": "1", "new_string": "2"});
    EditTool.validate_json(&edit, &fx.ctx).unwrap();
    std::fs::write(&path, "x = 11\n").unwrap();
    let err = EditTool.call_json(&edit, fx.ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("changed since"), "{err}");
}

#[tokio::test]
async fn edit_missing_or_ambiguous_old_string() {
    let fx = Fixture::new();
    let path = fx.write("f.txt", "a a a\n");
    run(&ReadTool, json!({"path": "f.txt"}), &fx.ctx)
        .await
        .unwrap();
    let missing = json!({"path": "f.txt", "old_string": "zzz", "new_string": "b"});
    assert!(
        run(&EditTool, missing, &fx.ctx)
            .await
            .unwrap_err()
            .contains("not found")
    );
    let ambiguous = json!({"path": "f.txt", "old_string": "a", "new_string": "b"});
    let err = run(&EditTool, ambiguous, &fx.ctx).await.unwrap_err();
    assert!(err.contains("occurs 3 times"), "{err}");
    let all = json!({"path": "f.txt", "old_string": "a", "new_string": "b", "replace_all": true});
    assert_eq!(
        run(&EditTool, all, &fx.ctx).await.unwrap().content,
        "edited f.txt: 3 replacements"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "b b b\n");
    let same = json!({"path": "f.txt", "old_string": "b", "new_string": "b"});
    assert!(
        run(&EditTool, same, &fx.ctx)
            .await
            .unwrap_err()
            .contains("the same")
    );
}

fn ignored_tree(fx: &Fixture) {
    fx.write(".gitignore", "target/\n*.log\n");
    fx.write("src/main.rs", "fn main() { needle(); }\n");
    fx.write("src/lib.rs", "pub fn needle() {}\n");
    fx.write("target/debug/gen.rs", "fn needle() {}\n");
    fx.write("notes.log", "needle\n");
    fx.write("README.md", "no match here\n");
    std::fs::write(fx.ws().join("src/data.bin"), b"needle\0binary").unwrap();
}

#[tokio::test]
async fn glob_honours_gitignore() {
    let fx = Fixture::new();
    ignored_tree(&fx);
    let out = run(&GlobTool, json!({"pattern": "**/*.rs"}), &fx.ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "src/lib.rs\nsrc/main.rs");
    let by_name = run(&GlobTool, json!({"pattern": "*.log"}), &fx.ctx)
        .await
        .unwrap();
    assert_eq!(by_name.content, "no files matched");
    let rooted = run(
        &GlobTool,
        json!({"pattern": "*.rs", "path": "src"}),
        &fx.ctx,
    )
    .await
    .unwrap();
    assert_eq!(rooted.content, "src/lib.rs\nsrc/main.rs");
    assert!(
        run(&GlobTool, json!({"pattern": "a[", "path": "."}), &fx.ctx)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn grep_honours_gitignore_and_skips_binary_files() {
    let fx = Fixture::new();
    ignored_tree(&fx);
    let out = run(&GrepTool, json!({"pattern": "needle"}), &fx.ctx)
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "src/lib.rs:1:pub fn needle() {}\nsrc/main.rs:1:fn main() { needle(); }"
    );
    let filtered = run(
        &GrepTool,
        json!({"pattern": "needle", "glob": "main.*"}),
        &fx.ctx,
    )
    .await
    .unwrap();
    assert_eq!(filtered.content, "src/main.rs:1:fn main() { needle(); }");
    let none = run(&GrepTool, json!({"pattern": "absent"}), &fx.ctx)
        .await
        .unwrap();
    assert_eq!(none.content, "no matches");
    let err = run(&GrepTool, json!({"pattern": "("}), &fx.ctx)
        .await
        .unwrap_err();
    assert!(err.contains("bad regex"), "{err}");
    let err = run(&GrepTool, json!({"pattern": "x", "path": "../"}), &fx.ctx)
        .await
        .unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
}

#[tokio::test]
async fn write_and_edit_refuse_git_and_crew_files() {
    let fx = Fixture::new();
    let pointer = fx.write(".git", "gitdir: /elsewhere/.git/worktrees/alice\n");
    let config = fx.write("crew.toml", "[team]\nname = \"t\"\n");
    let task = fx.write(".tasks/1.json", "{}");
    std::os::unix::fs::symlink(fx.ws().join(".crew"), fx.ws().join("runtime")).unwrap();
    std::fs::create_dir_all(fx.ws().join(".crew")).unwrap();
    for file in [&pointer, &config, &task] {
        run(&ReadTool, json!({"path": file}), &fx.ctx)
            .await
            .unwrap();
    }
    for (path, shown) in [
        (".git", ".git"),
        ("crew.toml", "crew.toml"),
        (".tasks/1.json", ".tasks/1.json"),
        (".worktrees/bob/x", ".worktrees/bob/x"),
        ("runtime/new", "runtime/new"),
    ] {
        let err = run(&WriteTool, json!({"path": path, "content": "x"}), &fx.ctx)
            .await
            .unwrap_err();
        assert!(
            err.contains("is protected") && err.contains(shown),
            "{path}: {err}"
        );
    }
    let err = run(
        &EditTool,
        json!({"path": ".git", "old_string": "alice", "new_string": "main"}),
        &fx.ctx,
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("is protected") && err.contains(".git"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&pointer).unwrap(),
        "gitdir: /elsewhere/.git/worktrees/alice\n"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "[team]\nname = \"t\"\n"
    );
    assert!(!fx.ws().join(".crew/new").exists());
    assert!(!fx.ws().join(".worktrees").exists());
}
