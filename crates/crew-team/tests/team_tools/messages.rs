//! send_message, request_shutdown, request_plan_approval and review_plan.

use std::time::Duration;

use crew_store::RequestState;
use crew_team::tools::{RequestPlanApproval, RequestShutdown, ReviewPlan, SendMessage};
use crew_tools::ToolJson;
use serde_json::json;

use super::support::{Team, ok_json, refusal};
use crew_store::MessageKind;

#[tokio::test]
async fn a_typed_message_lands_in_the_recipients_inbox() {
    let team = Team::new();
    let ctx = team.ctx();
    let send = SendMessage::new(team.env("lead"));
    let sent = ok_json(
        &send,
        json!({"to": "alice", "type": "task_assignment", "text": "take task_1"}),
        &ctx,
    )
    .await;
    ok_json(&send, json!({"to": "alice", "text": "thanks"}), &ctx).await;
    let inbox = team.inbox("alice");
    assert_eq!(inbox.len(), 2);
    assert_eq!(inbox[0].id, sent["sent"].as_str().unwrap());
    assert_eq!(inbox[0].from, "lead");
    assert_eq!(inbox[0].kind, MessageKind::TaskAssignment);
    assert_eq!(inbox[0].text.as_deref(), Some("take task_1"));
    assert_eq!(inbox[1].kind, MessageKind::Message, "the default type");
    assert!(inbox.iter().all(|m| m.request_id.is_none()));
}

#[tokio::test]
async fn recipients_are_checked() {
    let team = Team::new();
    let ctx = team.ctx();
    let send = SendMessage::new(team.env("alice"));
    assert_eq!(
        refusal(&send, json!({"to": "zed", "text": "hi"}), &ctx).await,
        "unknown recipient \"zed\"; the team is: lead, alice, bob, carol, user"
    );
    assert_eq!(
        refusal(&send, json!({"to": "user", "text": "done!"}), &ctx).await,
        "nobody may address `user`: the person is reached through the lead's conversation"
    );
    let lead_to_user = SendMessage::new(team.env("lead"));
    assert_eq!(
        refusal(&lead_to_user, json!({"to": "user", "text": "done"}), &ctx).await,
        "nobody may address `user`: the person is reached through the lead's conversation"
    );
    assert_eq!(
        refusal(&send, json!({"to": "alice", "text": "note to self"}), &ctx).await,
        "alice cannot address itself"
    );
    let bad_type = refusal(
        &send,
        json!({"to": "bob", "type": "shutdown_response", "text": "x"}),
        &ctx,
    )
    .await;
    assert!(bad_type.contains("field `type`"), "{bad_type}");
    // The call checks again, for a caller that skipped validation.
    let direct = send
        .call_json(&json!({"to": "user", "text": "x"}), ctx.clone())
        .await
        .unwrap();
    assert!(direct.is_error);
    assert!(
        !team.workspace.mailboxes().dir().exists(),
        "nothing was sent"
    );
}

#[tokio::test]
async fn shutdown_is_a_request_with_an_id() {
    let team = Team::new();
    let ctx = team.ctx();
    let shutdown = RequestShutdown::new(team.env("lead"));
    let out = ok_json(&shutdown, json!({"to": "bob", "reason": "all done"}), &ctx).await;
    let request_id = out["request_id"].as_str().unwrap().to_string();
    assert!(request_id.starts_with("req_"), "{request_id}");
    let inbox = team.inbox("bob");
    assert_eq!(inbox[0].kind, MessageKind::ShutdownRequest);
    assert_eq!(inbox[0].request_id.as_deref(), Some(request_id.as_str()));
    assert_eq!(inbox[0].text.as_deref(), Some("all done"));
    let requests = team
        .workspace
        .mailboxes()
        .requests(Duration::from_secs(1))
        .unwrap();
    assert_eq!(requests[0].state, RequestState::Pending);
    assert_eq!(
        requests[0].timeout_secs, 600,
        "the request carries its timeout"
    );
    assert_eq!(
        refusal(&shutdown, json!({"to": "user"}), &ctx).await,
        "nobody may address `user`: the person is reached through the lead's conversation"
    );
    assert_eq!(
        refusal(&shutdown, json!({"to": "dave"}), &ctx).await,
        "unknown recipient \"dave\"; the team is: lead, alice, bob, carol, user"
    );
}

#[tokio::test]
async fn the_lead_approves_a_plan_once() {
    let team = Team::new();
    let ctx = team.ctx();
    let ask = RequestPlanApproval::new(team.env("alice"));
    let out = ok_json(&ask, json!({"plan": "1. parse\n2. test"}), &ctx).await;
    let request_id = out["request_id"].as_str().unwrap().to_string();
    assert_eq!(out["to"], "lead");
    let to_lead = team.inbox("lead");
    assert_eq!(to_lead[0].kind, MessageKind::PlanApprovalRequest);
    assert_eq!(to_lead[0].text.as_deref(), Some("1. parse\n2. test"));

    let review = ReviewPlan::new(team.env("lead"));
    let answered = ok_json(
        &review,
        json!({"request_id": request_id, "approve": true, "feedback": "go"}),
        &ctx,
    )
    .await;
    assert_eq!(answered["to"], "alice");
    let answer = &team.inbox("alice")[0];
    assert_eq!(answer.kind, MessageKind::PlanApprovalResponse);
    assert_eq!(answer.request_id.as_deref(), Some(request_id.as_str()));
    assert_eq!(answer.approve, Some(true));
    assert_eq!(answer.text.as_deref(), Some("go"));

    assert_eq!(
        refusal(
            &review,
            json!({"request_id": request_id, "approve": false}),
            &ctx
        )
        .await,
        format!("request {request_id} was already answered (approved) by lead")
    );
    assert_eq!(
        refusal(
            &review,
            json!({"request_id": "req_nope", "approve": true}),
            &ctx
        )
        .await,
        "no request with id req_nope"
    );
}

#[tokio::test]
async fn review_plan_answers_plan_requests_only() {
    let team = Team::new();
    let ctx = team.ctx();
    let out = ok_json(
        &RequestShutdown::new(team.env("lead")),
        json!({"to": "alice"}),
        &ctx,
    )
    .await;
    let request_id = out["request_id"].as_str().unwrap();
    let review = ReviewPlan::new(team.env("lead"));
    assert_eq!(
        refusal(
            &review,
            json!({"request_id": request_id, "approve": true}),
            &ctx
        )
        .await,
        format!("request {request_id} is a shutdown_request, not a plan_approval_request")
    );
    assert_eq!(team.inbox("lead").len(), 0, "no answer was sent");
    let lead_asks = RequestPlanApproval::new(team.env("lead"));
    assert_eq!(
        refusal(&lead_asks, json!({"plan": "x"}), &ctx).await,
        "the lead approves plans; it does not ask for approval"
    );
}

#[tokio::test]
async fn only_the_lead_it_was_sent_to_can_review_a_plan() {
    let team = Team::new();
    let ctx = team.ctx();
    let out = ok_json(
        &RequestPlanApproval::new(team.env("alice")),
        json!({"plan": "refactor"}),
        &ctx,
    )
    .await;
    let request_id = out["request_id"].as_str().unwrap();
    let bob_reviews = ReviewPlan::new(team.env("bob"));
    assert_eq!(
        refusal(
            &bob_reviews,
            json!({"request_id": request_id, "approve": true}),
            &ctx
        )
        .await,
        format!("request {request_id} is addressed to lead; bob cannot answer it")
    );
}

#[test]
fn messaging_tools_are_not_concurrency_safe() {
    let team = Team::new();
    let input = json!({"to": "bob", "text": "x"});
    assert!(!SendMessage::new(team.env("lead")).is_concurrency_safe_json(&input));
    assert!(!RequestShutdown::new(team.env("lead")).is_concurrency_safe_json(&input));
    assert!(!RequestPlanApproval::new(team.env("alice")).is_concurrency_safe_json(&input));
    assert!(!ReviewPlan::new(team.env("lead")).is_concurrency_safe_json(&input));
}
