//! Wraps the pipeline's prompter so every permission question and answer becomes an event.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::emitter::Emitter;
use crate::event::AgentEvent;
use crew_tools::{PermissionAnswer, PermissionAsk, Prompter};

pub(crate) struct ObservedPrompter {
    pub inner: Arc<dyn Prompter>,
    pub emitter: Arc<Emitter>,
}

impl Prompter for ObservedPrompter {
    fn ask(&self, req: PermissionAsk) -> BoxFuture<'static, PermissionAnswer> {
        self.emitter.emit(AgentEvent::PermissionAsked {
            tool: req.tool.clone(),
            input: req.input.clone(),
            reason: req.reason.clone(),
        });
        let tool = req.tool.clone();
        let answer = self.inner.ask(req);
        let emitter = Arc::clone(&self.emitter);
        Box::pin(async move {
            let answer = answer.await;
            let (allowed, detail) = match &answer {
                PermissionAnswer::Allow => (true, String::new()),
                PermissionAnswer::AllowAlways(rule) => (true, format!("always: {rule}")),
                PermissionAnswer::Deny(reason) => (false, reason.clone()),
            };
            emitter.emit(AgentEvent::PermissionAnswered {
                tool,
                allowed,
                detail,
            });
            answer
        })
    }
}
