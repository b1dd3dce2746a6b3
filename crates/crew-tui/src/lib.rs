//! The workbench screen: the only layer that touches the terminal.
//!
//! `AppState` is plain data; `render` draws it (pure, one function per pane); `update` is the
//! reducer turning events (keys, mouse, file changes, finished work) into state changes and
//! `Effect`s, which `effects::execute` carries out against the store and git. The runtime wires
//! these to the terminal and to background threads; tests drive `update` directly.

pub mod action;
pub mod ask;
pub mod data;
pub mod diffview;
pub mod effects;
pub mod event;
pub mod folds;
pub mod highlight;
pub mod keymap;
pub mod keys;
pub mod layout;
pub mod memories;
pub mod navigate;
pub mod presets;
pub mod proposal;
pub mod queue_view;
pub mod render;
pub mod review;
pub mod runtime;
pub mod since;
pub mod state;
pub mod steer;
pub mod store_effects;
pub mod store_feed;
pub mod submit;
pub mod terminal;
pub mod theme;
pub mod uiconfig;
pub mod update;
pub mod warning;
pub mod workspace_view;

pub use event::{Effect, Event};
pub use keymap::Keymap;
pub use render::render;
pub use runtime::{Options, StoreCheckout, run, run_on_store};
pub use state::{AppState, Pane};
pub use theme::Theme;
pub use update::update;
