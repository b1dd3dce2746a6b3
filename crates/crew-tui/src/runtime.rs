//! The event loop: input, file-system changes, ticks, the team daemon's state and finished work
//! arrive on one channel; store work, git work and highlighting run on their own threads so
//! input never waits (an answer never waits behind a merge; a diff or the review queue asked
//! for again replaces the one still queued, and a result overtaken by a newer request is
//! dropped, as gitui's asyncgit does); bursts of events are folded into one redraw.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, SystemTime};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use ratatui::crossterm::event::{self as term_event, Event as TermEvent};
use tracing::warn;

use crate::data::Loader;
use crate::effects::{self, Effects};
use crate::event::{Effect, Event};
use crate::highlight::Highlighter;
use crate::keymap::Keymap;
use crate::render::render;
use crate::since::LastSeen;
use crate::state::{AppState, SandboxState};
use crate::store_effects::StoreEffects;
use crate::terminal::Session;
use crate::theme::Theme;
use crate::uiconfig;
use crew_team::run::daemon;

/// `crew ui` options.
#[derive(Debug, Clone)]
pub struct Options {
    pub theme: String,
    pub keymap: String,
    /// Watching another tool's team (`crew attach`): what the header says it is. Only answers
    /// to requests are carried out; the rest is refused as read-only.
    pub attached: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            theme: "default".into(),
            keymap: "default".into(),
            attached: None,
        }
    }
}

/// The state a session starts with: theme and keymap loaded, their warnings kept for display.
pub fn initial_state(root: &Path, options: &Options, now: SystemTime) -> AppState {
    let (theme, mut warnings) = Theme::load(&options.theme);
    let (keymap, keymap_warnings) = Keymap::load(&options.keymap);
    warnings.extend(keymap_warnings);
    let mut state = AppState::new(root.to_path_buf(), theme, keymap, now);
    state.warnings = warnings;
    state
}

/// What the header says about the sandbox the team's commands run in, probed with this
/// executable (the one that runs the workers).
fn sandbox_state(root: &Path) -> SandboxState {
    let Ok(config) = crew_config::TeamConfig::load(&root.join(crew_config::FILE_NAME)) else {
        return SandboxState::Unknown;
    };
    match crew_tools::Sandbox::new(config.permissions.sandbox, false, true).warning() {
        Some(warning) => SandboxState::Unconfined(warning),
        None => SandboxState::Confined,
    }
}

/// Opens the full-screen workbench on the repository at `root` until the person quits.
pub fn run(root: &Path, options: Options) -> anyhow::Result<()> {
    // Fail before taking over the terminal if there is no usable crew.toml.
    uiconfig::load(root)?;
    let mut state = initial_state(root, &options, SystemTime::now());
    state.sandbox = sandbox_state(root);
    state.attached = options.attached.clone();
    state.since = LastSeen::read(root);
    let (tx, rx) = channel::<Event>();
    let _watcher = spawn_loader(root, tx.clone())?;
    let lanes = {
        let root = root.to_path_buf();
        Lanes::spawn(move || Effects::new(&root), &tx)
    };
    spawn_daemon_link(root, tx.clone());
    // Another tool's team whose teammates crew runs in the person's repository: reviewable here.
    // Looked at each time, as the link is made when crew starts the first teammate, which may be
    // after the screen.
    let reviews_here = || crew_store::Workspace::new(root).is_linked();
    let attached = state.attached.is_some();
    let may = |effect: &Effect| !attached || attached_may(effect, reviews_here());
    drive(state, rx, tx, &lanes, may, Some(root))
}

/// Opens the workbench on the team kept in PostgreSQL at `store` (named `shown` in the header)
/// until the person quits; reviews merge into `checkout`, the person's, when it runs in one,
/// and the screen runs the team's merge queue there meanwhile (unless another process does).
/// `runtime`: a multi-threaded one, where the store's connections run.
pub fn run_on_store(
    runtime: &tokio::runtime::Handle,
    store: crew_store_pg::PgStore,
    shown: String,
    checkout: Option<StoreCheckout>,
    options: Options,
) -> anyhow::Result<()> {
    let root = checkout.as_ref().map(|c| c.root.clone());
    let here = root.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut state = initial_state(&here, &options, SystemTime::now());
    state.store = Some(shown);
    let (tx, rx) = channel::<Event>();
    crate::store_feed::spawn(store.clone(), root.clone(), tx.clone(), runtime);
    let queue = match &checkout {
        Some(checkout) => Some(QueueSaying::start(&store, checkout, runtime, tx.clone())?),
        None => None,
    };
    let handle = runtime.clone();
    let queue_files = checkout.map(|c| c.queue);
    let lanes = Lanes::spawn(
        move || {
            StoreEffects::new(
                store.clone(),
                root.clone(),
                queue_files.clone(),
                handle.clone(),
            )
        },
        &tx,
    );
    let shown = drive(state, rx, tx, &lanes, |_| true, None);
    drop(queue);
    shown
}

/// The person's checkout a screen on the store runs in: where reviews merge, and the store
/// team's merge queue there.
pub struct StoreCheckout {
    pub root: PathBuf,
    pub queue: crew_team::merge_queue::QueueFiles,
}

/// The merge queue a screen on the store runs, what it says shown on the screen; dropped (the
/// queue stopped, a test going on ended) when the screen quits.
struct QueueSaying {
    quit: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl QueueSaying {
    fn start(
        store: &crew_store_pg::PgStore,
        checkout: &StoreCheckout,
        runtime: &tokio::runtime::Handle,
        tx: Sender<Event>,
    ) -> anyhow::Result<QueueSaying> {
        let team = runtime
            .block_on(store.team())?
            .ok_or_else(|| anyhow::anyhow!("no team is published in the store"))?;
        let path = Path::new("crew.toml (as published in the store)");
        let config = crew_config::TeamConfig::parse(path, &team.toml)?;
        let runner = crew_team::merge_queue::QueueRunner::start_on(
            crew_team::run::link::TeamLink::postgres(store.clone(), runtime.clone()),
            checkout.root.clone(),
            checkout.queue.clone(),
            Arc::new(config),
        );
        let quit = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = quit.clone();
        let thread = thread::Builder::new()
            .name("merge-queue-said".into())
            .spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for text in runner.said() {
                        let _ = tx.send(Event::Said(text));
                    }
                    thread::sleep(Duration::from_millis(250));
                }
            })?;
        Ok(QueueSaying {
            quit,
            thread: Some(thread),
        })
    }
}

impl Drop for QueueSaying {
    fn drop(&mut self) {
        self.quit.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            warn!("the merge queue's messages thread panicked");
        }
    }
}

/// Something that carries out effects on a thread of its own.
trait Execute {
    fn execute(&mut self, effect: Effect) -> Option<Event>;
}

impl Execute for Effects {
    fn execute(&mut self, effect: Effect) -> Option<Event> {
        Effects::execute(self, effect)
    }
}

impl Execute for StoreEffects {
    fn execute(&mut self, effect: Effect) -> Option<Event> {
        StoreEffects::execute(self, effect)
    }
}

/// The threads effects are carried out on, one per `Lane`.
struct Lanes {
    jobs: Sender<Effect>,
    git_jobs: Sender<Effect>,
    diffs: Latest,
    reviews: Latest,
    highlights: Sender<Effect>,
}

impl Lanes {
    /// Each lane's thread carries out effects with an executor `make` gives it.
    fn spawn<E: Execute + 'static>(
        make: impl Fn() -> E + Clone + Send + 'static,
        tx: &Sender<Event>,
    ) -> Lanes {
        Lanes {
            jobs: spawn_worker(make.clone(), tx.clone()),
            git_jobs: spawn_worker(make.clone(), tx.clone()),
            diffs: Latest::spawn(make.clone(), tx.clone()),
            reviews: Latest::spawn(make, tx.clone()),
            highlights: spawn_highlighter(tx.clone()),
        }
    }
}

/// The screen's loop until the person quits: draws, folds what arrived into the state, and
/// hands each effect the screen `may` carry out to its lane. `root`: where the last-seen
/// marker is kept (a checkout's team).
fn drive(
    mut state: AppState,
    rx: Receiver<Event>,
    tx: Sender<Event>,
    lanes: &Lanes,
    may: impl Fn(&Effect) -> bool,
    root: Option<&Path>,
) -> anyhow::Result<()> {
    spawn_ticker(tx.clone());
    spawn_input(tx);
    let mut session = Session::start()?;
    let size = session.terminal.size()?;
    state.size = (size.width, size.height);
    let mut marked = SystemTime::UNIX_EPOCH;
    loop {
        // Refreshed while attached, so a terminal killed without a goodbye leaves a recent one.
        if let Some(root) = root
            && state.workspace.loaded
            && state.now.duration_since(marked).unwrap_or_default() >= MARK_EVERY
        {
            LastSeen::write(root, state.now);
            marked = state.now;
        }
        session.terminal.draw(|frame| render(&state, frame))?;
        let Ok(first) = rx.recv() else { break };
        let mut effects = crate::update::update(&mut state, first);
        // Everything already queued is folded into this one redraw.
        while let Ok(next) = rx.try_recv() {
            effects.extend(crate::update::update(&mut state, next));
        }
        for effect in effects {
            if !may(&effect) {
                // Nothing to review in another tool's team; the rest is said to be read-only.
                if !matches!(effect, Effect::LoadReviews | Effect::LoadQueue) {
                    let refused = Event::Done(Err(
                        "read-only: attached to another tool's team, only its requests can be answered here".into(),
                    ));
                    let _ = crate::update::update(&mut state, refused);
                }
                continue;
            }
            let queue = match lane(&effect) {
                Lane::Terminal => {
                    match &effect {
                        Effect::DesktopNotify { text } => session.desktop_notify(text),
                        _ => session.bell(),
                    }
                    continue;
                }
                Lane::Highlight => &lanes.highlights,
                Lane::Git => &lanes.git_jobs,
                Lane::Diff => {
                    lanes.diffs.submit(effect);
                    continue;
                }
                Lane::Reviews => {
                    lanes.reviews.submit(effect);
                    continue;
                }
                Lane::Store => &lanes.jobs,
            };
            let _ = queue.send(effect);
        }
        if state.quit {
            break;
        }
    }
    // Detaching is leaving: nothing is waited for (the team runs on in its daemon).
    drop(session);
    if let Some(root) = root
        && state.workspace.loaded
    {
        LastSeen::write(root, SystemTime::now());
    }
    Ok(())
}

/// What the screen may do on a team it is attached to: answer once, show, ring; and review
/// when crew runs the team's teammates in worktrees of the person's repository (`reviews`).
fn attached_may(effect: &Effect, reviews: bool) -> bool {
    let review = matches!(
        effect,
        Effect::LoadReviews
            | Effect::LoadDiff { .. }
            | Effect::MergeReview { .. }
            | Effect::SendBackReview { .. }
            | Effect::DiscardReview { .. }
    );
    (reviews && review)
        || matches!(
            effect,
            Effect::Respond { .. }
                | Effect::HighlightFile { .. }
                | Effect::HighlightCommand { .. }
                | Effect::PrepareProposal { .. }
                | Effect::HighlightProposal { .. }
                | Effect::Bell
                | Effect::DesktopNotify { .. }
                | Effect::Notify { .. }
        )
}

/// How often an attached screen refreshes its last-seen marker.
const MARK_EVERY: Duration = Duration::from_secs(5);

/// While a team daemon runs here: one connection stays open as this screen's attachment, and
/// the daemon's state is asked for often enough that a stop's progress counts down smoothly.
/// `Event::Daemon(None)` says the team is gone.
fn spawn_daemon_link(root: &Path, tx: Sender<Event>) {
    let ws = crew_store::Workspace::new(root);
    if daemon::running(&ws).is_none_or(|t| t.headless) {
        return;
    }
    thread::spawn(move || {
        let Ok(attachment) =
            daemon::control::connect(&ws, &crew_protocol::control::Request::Attach)
        else {
            return;
        };
        let mut last = daemon::control::read_reply(&attachment).ok();
        loop {
            if tx.send(Event::Daemon(last.clone())).is_err() || last.is_none() {
                return;
            }
            let every = if last.as_ref().is_some_and(|s| s.stopping.is_some()) {
                Duration::from_millis(200)
            } else {
                Duration::from_secs(1)
            };
            thread::sleep(every);
            let now = daemon::control::ask(&ws, &crew_protocol::control::Request::Status).ok();
            if now == last {
                continue;
            }
            last = now;
        }
    });
}

/// A lane where only the newest job counts: a job submitted while another waits replaces it,
/// and a result that a newer submission overtook is dropped rather than shown.
struct Latest {
    slot: Arc<Slot>,
}

/// The generation of the newest submission, and the job waiting to run (if any).
type Slot = (Mutex<(u64, Option<Effect>)>, Condvar);

impl Latest {
    fn spawn<E: Execute + 'static>(
        make: impl FnOnce() -> E + Send + 'static,
        tx: Sender<Event>,
    ) -> Latest {
        let slot: Arc<Slot> = Arc::default();
        let shared = slot.clone();
        thread::spawn(move || {
            let mut effects = make();
            let (lock, ready) = &*shared;
            loop {
                let (generation, effect) = {
                    let mut guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
                    loop {
                        if let Some(effect) = guard.1.take() {
                            break (guard.0, effect);
                        }
                        guard = ready.wait(guard).unwrap_or_else(PoisonError::into_inner);
                    }
                };
                let Some(event) = effects.execute(effect) else {
                    continue;
                };
                let current = lock.lock().unwrap_or_else(PoisonError::into_inner).0;
                if current == generation && tx.send(event).is_err() {
                    return;
                }
            }
        });
        Latest { slot }
    }

    fn submit(&self, effect: Effect) {
        let (lock, ready) = &*self.slot;
        let mut guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        guard.0 += 1;
        guard.1 = Some(effect);
        ready.notify_one();
    }
}

/// Watches the store, the runtime folder and crew.toml; a loader thread turns each burst of
/// events into `Event::Data` (the first one being the whole workspace). Keep the returned
/// watcher alive for as long as changes should arrive.
pub fn spawn_loader(root: &Path, tx: Sender<Event>) -> anyhow::Result<RecommendedWatcher> {
    let mut loader = Loader::new(root);
    let (path_tx, path_rx) = channel::<Vec<PathBuf>>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Reads are reported too (the loader's own among them): only writes matter.
        let paths = match event {
            Ok(e) if matches!(e.kind, EventKind::Access(_)) => return,
            Ok(e) => e.paths,
            // Events may have been lost: an empty list asks for a full reload.
            Err(_) => Vec::new(),
        };
        let _ = path_tx.send(paths);
    })?;
    for (dir, recursive) in loader.watched() {
        std::fs::create_dir_all(&dir)?;
        let mode = if recursive {
            RecursiveMode::Recursive
        } else {
            RecursiveMode::NonRecursive
        };
        watcher.watch(&dir, mode)?;
    }
    thread::spawn(move || {
        if tx.send(Event::Data(loader.load_all())).is_err() {
            return;
        }
        while let Ok(first) = path_rx.recv() {
            let mut paths = first;
            let mut rescan = paths.is_empty();
            while let Ok(more) = path_rx.try_recv() {
                rescan |= more.is_empty();
                paths.extend(more);
            }
            if rescan {
                paths.clear();
            }
            let changes = loader.changed(&paths);
            if !changes.is_empty() && tx.send(Event::Data(changes)).is_err() {
                return;
            }
        }
    });
    Ok(watcher)
}

/// Where an effect is carried out. Git work on a big tree takes seconds (its progress shows in
/// the diff view and the status line meanwhile): it has its own thread, in order, so an answer to
/// a permission request or a message never waits behind a merge.
#[derive(Debug, PartialEq, Eq)]
enum Lane {
    Terminal,
    Highlight,
    /// What changes git, in order.
    Git,
    /// Reads only the newest request of which matters.
    Diff,
    Reviews,
    Store,
}

fn lane(effect: &Effect) -> Lane {
    match effect {
        Effect::Bell | Effect::DesktopNotify { .. } => Lane::Terminal,
        Effect::HighlightFile { .. }
        | Effect::HighlightCommand { .. }
        | Effect::HighlightProposal { .. } => Lane::Highlight,
        Effect::LoadDiff { .. } => Lane::Diff,
        Effect::LoadReviews => Lane::Reviews,
        Effect::Merge { .. }
        | Effect::Discard { .. }
        | Effect::MergeReview { .. }
        | Effect::SendBackReview { .. }
        | Effect::DiscardReview { .. } => Lane::Git,
        _ => Lane::Store,
    }
}

fn spawn_worker<E: Execute + 'static>(
    make: impl FnOnce() -> E + Send + 'static,
    tx: Sender<Event>,
) -> Sender<Effect> {
    let (jobs, job_rx) = channel::<Effect>();
    thread::spawn(move || {
        let mut effects = make();
        for effect in job_rx {
            if let Some(event) = effects.execute(effect)
                && tx.send(event).is_err()
            {
                return;
            }
        }
    });
    jobs
}

fn spawn_highlighter(tx: Sender<Event>) -> Sender<Effect> {
    let (jobs, job_rx): (Sender<Effect>, Receiver<Effect>) = channel();
    thread::spawn(move || {
        let highlighter = Highlighter::default();
        for effect in job_rx {
            if let Some(event) = effects::highlight(&highlighter, effect)
                && tx.send(event).is_err()
            {
                return;
            }
        }
    });
    jobs
}

fn spawn_ticker(tx: Sender<Event>) {
    thread::spawn(move || {
        while tx.send(Event::Tick(SystemTime::now())).is_ok() {
            thread::sleep(Duration::from_secs(1));
        }
    });
}

fn spawn_input(tx: Sender<Event>) {
    thread::spawn(move || {
        loop {
            let event = match term_event::read() {
                Ok(TermEvent::Key(key)) => Event::Key(key),
                Ok(TermEvent::Mouse(mouse)) => Event::Mouse(mouse),
                Ok(TermEvent::Resize(w, h)) => Event::Resize(w, h),
                Ok(_) => continue,
                Err(e) => {
                    warn!(error = %e, "cannot read the terminal");
                    return;
                }
            };
            if tx.send(event).is_err() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attached_screen_reviews_only_where_crew_runs_the_teammates() {
        let merge = Effect::MergeReview {
            id: crew_store::TaskId(1),
        };
        assert!(!attached_may(&merge, false));
        assert!(attached_may(&merge, true));
        assert!(attached_may(&Effect::LoadReviews, true));
        // Steering another tool's team stays refused either way.
        assert!(!attached_may(&Effect::StopTeam, true));
        assert!(!attached_may(
            &Effect::ApproveReview {
                id: crew_store::TaskId(1)
            },
            true
        ));
    }

    /// Diffs asked for faster than they are worked out: the last one asked for always arrives,
    /// and nothing older ever arrives after something newer.
    #[test]
    fn a_newer_diff_replaces_the_queued_one_and_stale_results_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(crew_config::FILE_NAME),
            "[team]\nname = \"t\"\nbase_branch = \"main\"\n\n[lead]\nname = \"lead\"\n\
             model = { provider = \"scripted\", scenario = \"s.toml\" }\n",
        )
        .unwrap();
        let (tx, rx) = channel();
        let root = dir.path().to_path_buf();
        let lane = Latest::spawn(move || Effects::new(&root), tx);
        let asked = 50;
        for n in 0..asked {
            lane.submit(Effect::LoadDiff {
                name: format!("t{n}").parse().unwrap(),
                task: None,
            });
        }
        let mut seen = Vec::new();
        while let Ok(event) = rx.recv_timeout(Duration::from_secs(20)) {
            let Event::Diff { name, .. } = event else {
                panic!("not a diff: {event:?}");
            };
            let n: usize = name[1..].parse().unwrap();
            seen.push(n);
            if n == asked - 1 {
                break;
            }
        }
        assert_eq!(seen.last(), Some(&(asked - 1)), "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    }

    #[test]
    fn git_work_and_answers_to_requests_go_to_different_threads() {
        let name = || crew_store::AgentName::parse("alice").unwrap();
        assert_eq!(
            lane(&Effect::LoadDiff {
                name: name(),
                task: None,
            }),
            Lane::Diff
        );
        assert_eq!(lane(&Effect::LoadReviews), Lane::Reviews);
        for git in [
            Effect::Merge { name: name() },
            Effect::Discard { name: name() },
            Effect::MergeReview {
                id: crew_store::TaskId(1),
            },
            Effect::DiscardReview {
                id: crew_store::TaskId(1),
                reason: "no".into(),
            },
        ] {
            assert_eq!(lane(&git), Lane::Git, "{git:?}");
        }
        let answer = Effect::Respond {
            request_id: "req_1".into(),
            approve: true,
            note: None,
        };
        assert_eq!(lane(&answer), Lane::Store);
        let message = Effect::Send {
            to: name(),
            text: "hi".into(),
        };
        assert_eq!(lane(&message), Lane::Store);
        assert_eq!(lane(&Effect::Bell), Lane::Terminal);
        let notify = Effect::DesktopNotify { text: "hi".into() };
        assert_eq!(lane(&notify), Lane::Terminal);
    }
}
