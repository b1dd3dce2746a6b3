//! Running the team: a teammate's lifecycle (`worker`) and live status, the supervisor that
//! starts and watches the workers, the team as a daemon or headless in a terminal, budgets, and
//! the person's interrupt.

pub mod budget;
pub mod daemon;
pub mod headless;
pub mod interrupt;
pub mod link;
pub mod stand_in;
pub mod status;
pub mod supervisor;
pub mod team_control;
pub mod worker;
