//! The request/response protocols as tools: `request_shutdown` and `request_plan_approval`
//! send a request carrying a `request_id`; `review_plan` is the lead's answer to a plan.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, json};

use super::{CallError, TeamEnv, check_recipient, json_output, required_text, run_store, trimmed};
use crate::run::link::LinkedStore;
use crew_store::{AgentName, Draft, Message, MessageKind, Refusal, StoreError};
use crew_tools::{ToolContext, ToolFuture, ToolKind, ToolOutput, TypedTool};

/// Sends a request to `to`; it carries the timeout so every reader derives the same expiry.
fn send_request<S: LinkedStore>(
    env: &TeamEnv<S>,
    to: AgentName,
    kind: MessageKind,
    text: Option<String>,
) -> Result<Message, CallError> {
    let mut extra = Map::new();
    extra.insert(
        "timeout_secs".to_string(),
        json!(env.request_timeout.as_secs()),
    );
    let draft = Draft {
        from: env.me.clone(),
        to,
        kind,
        text,
        request: true,
        extra,
    };
    Ok(env
        .link
        .call(|store| async move { store.send(draft).await })?)
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestShutdownInput {
    #[schemars(with = "String", pattern(AgentName::PATTERN))]
    pub to: AgentName,
    pub reason: Option<String>,
}

impl<S: LinkedStore> TypedTool for RequestShutdown<S> {
    type Input = RequestShutdownInput;
    const NAME: &'static str = "request_shutdown";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Ask a teammate to shut down. Returns a request_id; the teammate answers with a \
         shutdown_response carrying it (it may refuse while mid-task)."
    }

    fn validate(&self, input: &RequestShutdownInput, _ctx: &ToolContext) -> Result<(), String> {
        check_recipient(&self.env, &input.to)
    }

    fn run(&self, input: RequestShutdownInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            check_recipient(env, &input.to).map_err(CallError::Refused)?;
            let reason = input.reason.as_deref().and_then(trimmed);
            let sent = send_request(env, input.to, MessageKind::ShutdownRequest, reason)?;
            Ok(request_output(&sent))
        })
    }
}

team_tool! {
    /// A teammate in plan mode asks the lead to approve its plan before it may write.
    RequestPlanApproval
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestPlanApprovalInput {
    /// The plan, in full
    pub plan: String,
}

impl<S: LinkedStore> TypedTool for RequestPlanApproval<S> {
    type Input = RequestPlanApprovalInput;
    const NAME: &'static str = "request_plan_approval";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Send your plan to the lead for approval. Returns a request_id; the lead answers with a \
         plan_approval_response carrying it, approving or giving feedback."
    }

    fn validate(&self, input: &RequestPlanApprovalInput, _ctx: &ToolContext) -> Result<(), String> {
        required_text("plan", &input.plan)?;
        if self.env.me == self.env.lead {
            return Err("the lead approves plans; it does not ask for approval".to_string());
        }
        Ok(())
    }

    fn run(&self, input: RequestPlanApprovalInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let plan = required_text("plan", &input.plan).map_err(CallError::Input)?;
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewPlanInput {
    pub request_id: String,
    pub approve: bool,
    pub feedback: Option<String>,
}

impl<S: LinkedStore> TypedTool for ReviewPlan<S> {
    type Input = ReviewPlanInput;
    const NAME: &'static str = "review_plan";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Answer a teammate's plan_approval_request: approve it, or reject it with feedback \
         saying what to change. Only a pending request can be answered."
    }

    fn validate(&self, input: &ReviewPlanInput, _ctx: &ToolContext) -> Result<(), String> {
        required_text("request_id", &input.request_id).map(drop)
    }

    fn run(&self, input: ReviewPlanInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let request_id =
                required_text("request_id", &input.request_id).map_err(CallError::Input)?;
            let approve = input.approve;
            let timeout = env.request_timeout;
            let requests = env
                .link
                .call(|store| async move { store.requests(timeout).await })?;
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
            let (id, me) = (request_id.clone(), env.me.clone());
            let feedback = input.feedback.as_deref().and_then(trimmed);
            let answer = env.link.call(|store| async move {
                store.respond(&id, &me, approve, feedback, timeout).await
            })?;
            Ok(json_output(&json!({
                "answered": request_id,
                "approve": approve,
                "to": answer.to,
            })))
        })
    }
}
