//! `codex app-server`'s JSON-RPC over stdio: one object a line, without the `"jsonrpc"` field.
//! crew's requests carry ids from 1; the server's own requests (approvals) carry ids from 0,
//! which crew echoes back in its answer.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::work::cli_process::{CliProcess, Line};
use crate::work::codex::CodexError;

/// One message from the app-server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// The answer to crew's request `id`: its result, or the server's error message.
    Response {
        id: u64,
        result: Result<Value, String>,
    },
    /// A request crew must answer (an approval).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

impl Incoming {
    fn of(line: Value) -> Option<Self> {
        let method = line
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let params = line.get("params").cloned().unwrap_or(Value::Null);
        match (method, line.get("id")) {
            (Some(method), Some(id)) => Some(Self::Request {
                id: id.clone(),
                method,
                params,
            }),
            (Some(method), None) => Some(Self::Notification { method, params }),
            (None, Some(id)) => {
                let result = match line.get("error") {
                    Some(error) => Err(error
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| error.to_string(), str::to_string)),
                    None => Ok(line.get("result").cloned().unwrap_or(Value::Null)),
                };
                Some(Self::Response {
                    id: id.as_u64()?,
                    result,
                })
            }
            (None, None) => None,
        }
    }
}

pub(crate) struct Rpc {
    process: CliProcess,
    next_id: u64,
}

impl Rpc {
    pub(crate) fn new(process: CliProcess) -> Self {
        Self {
            process,
            next_id: 1,
        }
    }

    /// Sends request `method`; returns its id.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Result<u64, CodexError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"method": method, "id": id, "params": params}))?;
        Ok(id)
    }

    pub(crate) fn notify(&mut self, method: &str) -> Result<(), CodexError> {
        self.send(&json!({ "method": method }))
    }

    /// Answers the server's request `id`.
    pub(crate) fn respond(&mut self, id: &Value, result: Value) -> Result<(), CodexError> {
        self.send(&json!({"id": id, "result": result}))
    }

    /// Refuses the server's request `id` (one crew does not handle).
    pub(crate) fn refuse(&mut self, id: &Value, message: &str) -> Result<(), CodexError> {
        self.send(&json!({"id": id, "error": {"code": -32601, "message": message}}))
    }

    fn send(&mut self, line: &Value) -> Result<(), CodexError> {
        if self.process.send(line).is_err() {
            return Err(CodexError::Died(self.process.death()));
        }
        Ok(())
    }

    /// The next message, or `None` when none came within `wait`. A line that is not a JSON-RPC
    /// object, or the end of the output, is an error: the conversation is over.
    pub(crate) fn next_within(&mut self, wait: Duration) -> Result<Option<Incoming>, CodexError> {
        match self.process.next_within(wait) {
            None => Ok(None),
            Some(Line::Json(line)) => Incoming::of(line.clone())
                .map(Some)
                .ok_or_else(|| CodexError::NotJson(line.to_string())),
            Some(Line::NotJson(text)) => Err(CodexError::NotJson(text)),
            Some(Line::Closed) => Err(CodexError::Died(self.process.death())),
        }
    }

    /// Sends request `method` and waits (at most `limit`) for its answer; what else arrives
    /// meanwhile goes to `other`.
    pub(crate) fn call(
        &mut self,
        method: &str,
        params: Value,
        limit: Duration,
        mut other: impl FnMut(Incoming),
    ) -> Result<Result<Value, String>, CodexError> {
        let id = self.request(method, params)?;
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CodexError::NoAnswer {
                    method: method.to_string(),
                    secs: limit.as_secs(),
                });
            }
            match self.next_within(left)? {
                Some(Incoming::Response { id: got, result }) if got == id => return Ok(result),
                Some(message) => other(message),
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart_by_method_and_id() {
        let request = Incoming::of(
            json!({"method": "item/fileChange/requestApproval", "id": 0, "params": {"itemId": "c"}}),
        );
        assert!(
            matches!(&request, Some(Incoming::Request { id, .. }) if *id == json!(0)),
            "{request:?}"
        );
        let note = Incoming::of(json!({"method": "turn/started", "params": {}}));
        assert!(matches!(note, Some(Incoming::Notification { .. })));
        let answer = Incoming::of(json!({"id": 3, "result": {"turn": {"id": "t"}}}));
        assert!(matches!(
            answer,
            Some(Incoming::Response {
                id: 3,
                result: Ok(_)
            })
        ));
        let error =
            Incoming::of(json!({"id": 4, "error": {"code": -32600, "message": "no such thread"}}));
        assert_eq!(
            error,
            Some(Incoming::Response {
                id: 4,
                result: Err("no such thread".to_string())
            })
        );
        assert_eq!(Incoming::of(json!({"hello": 1})), None);
    }
}
