//! Sends every event to the transcript and then to the caller's sink.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::event::{AgentEvent, EventSink};
use crate::transcript::{TranscriptLine, TranscriptWriter};
use crew_store::task::now_rfc3339;

pub struct Emitter {
    sink: EventSink,
    /// `None` once writing failed: the failure is logged once and the agent goes on.
    transcript: Mutex<Option<TranscriptWriter>>,
    turn: AtomicU64,
}

impl Emitter {
    pub fn new(sink: EventSink, transcript: TranscriptWriter) -> Self {
        Self {
            sink,
            transcript: Mutex::new(Some(transcript)),
            turn: AtomicU64::new(0),
        }
    }

    /// Events from now on belong to `turn`.
    pub fn set_turn(&self, turn: u64) {
        self.turn.store(turn, Ordering::Relaxed);
    }

    pub fn emit(&self, event: AgentEvent) {
        let line = TranscriptLine {
            ts: now_rfc3339(),
            turn: self.turn.load(Ordering::Relaxed),
            event,
        };
        {
            // A writer poisoned by a panic elsewhere is still a valid file handle.
            let mut transcript = self
                .transcript
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(writer) = transcript.as_mut()
                && let Err(error) = writer.append(&line)
            {
                tracing::warn!(%error, "transcript write failed; no further events are recorded");
                *transcript = None;
            }
        }
        self.sink.emit(line.event);
    }
}
