//! The request/response protocols as tools: `request_shutdown` and `request_plan_approval`
//! send a request carrying a `request_id`; `review_plan` is the lead's answer to a plan.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{
    CallError, TeamEnv, json_output, optional_text, recipient, require_text, run_store, text_field,
    validate_recipient,
};
use crate::store::{Draft, Message, MessageKind, Refusal, StoreError};
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

/// Sends a request to `to`; it carries the timeout so every reader derives the same expiry.
fn send_request(
    env: &TeamEnv,
    to: String,
    kind: MessageKind,
    text: Option<String>,
) -> Result<Message, CallError> {
    let mut extra = Map::new();
    extra.insert(
        "timeout_secs".to_string(),
        json!(env.request_timeout.as_secs()),
    );
    Ok(env.workspace.mailboxes().send(
        &env.roster,
        Draft {
            from: env.me.clone(),
            to,
            kind,
            text,
            request: true,
            extra,
        },
    )?)
}

fn request_output(sent: &Message) -> ToolOutput {
    let wait_for = sent.kind.response();
    json_output(&json!({
        "request_id": sent.request_id,
        "to": sent.to,
        "note": format!("the answer comes to your inbox as a {wait_for} with this request_id"),
    }))
}

team_tool! {
    /// Asks a teammate to shut down; it may refuse while mid-task.
    RequestShutdown
}

impl Tool for RequestShutdown {
    fn name(&self) -> &str {
        "request_shutdown"
    }

    fn description(&self) -> &str {
        "Ask a teammate to shut down. Returns a request_id; the teammate answers with a \
         shutdown_response carrying it (it may refuse while mid-task)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "to": {"type": "string"},
                "reason": {"type": "string"}
            },
            "required": ["to"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        validate_recipient(&self.env, input)
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let to = recipient(env, &input)?;
            let sent = send_request(
                env,
                to,
                MessageKind::ShutdownRequest,
                optional_text(&input, "reason"),
            )?;
            Ok(request_output(&sent))
        })
    }
}

team_tool! {
    /// A teammate in plan mode asks the lead to approve its plan before it may write.
    RequestPlanApproval
}

impl Tool for RequestPlanApproval {
    fn name(&self) -> &str {
        "request_plan_approval"
    }

    fn description(&self) -> &str {
        "Send your plan to the lead for approval. Returns a request_id; the lead answers with a \
         plan_approval_response carrying it, approving or giving feedback."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "The plan, in full"}},
            "required": ["plan"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        require_text(input, "plan")?;
        if self.env.me == self.env.lead {
            return Err("the lead approves plans; it does not ask for approval".to_string());
        }
        Ok(())
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let plan = text_field(&input, "plan")?;
            let sent = send_request(
                env,
                env.lead.clone(),
                MessageKind::PlanApprovalRequest,
                Some(plan),
            )?;
            Ok(request_output(&sent))
        })
    }
}

team_tool! {
    /// The lead approves or rejects a pending plan approval request.
    ReviewPlan
}

impl Tool for ReviewPlan {
    fn name(&self) -> &str {
        "review_plan"
    }

    fn description(&self) -> &str {
        "Answer a teammate's plan_approval_request: approve it, or reject it with feedback \
         saying what to change. Only a pending request can be answered."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "request_id": {"type": "string"},
                "approve": {"type": "boolean"},
                "feedback": {"type": "string"}
            },
            "required": ["request_id", "approve"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        require_text(input, "request_id")
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let request_id = text_field(&input, "request_id")?;
            let approve = input
                .get("approve")
                .and_then(Value::as_bool)
                .ok_or_else(|| CallError::Input("`approve` must be true or false".to_string()))?;
            let mailboxes = env.workspace.mailboxes();
            let requests = mailboxes.requests(env.request_timeout)?;
            let Some(request) = requests.iter().find(|r| r.request_id == request_id) else {
                return Err(StoreError::from(Refusal::UnknownRequest(request_id)).into());
            };
            if request.kind != MessageKind::PlanApprovalRequest {
                return Err(CallError::Refused(format!(
                    "request {request_id} is a {}, not a {}",
                    request.kind,
                    MessageKind::PlanApprovalRequest
                )));
            }
            let answer = mailboxes.respond(
                &env.roster,
                &request_id,
                &env.me,
                approve,
                optional_text(&input, "feedback"),
                env.request_timeout,
            )?;
            Ok(json_output(&json!({
                "answered": request_id,
                "approve": approve,
                "to": answer.to,
            })))
        })
    }
}
