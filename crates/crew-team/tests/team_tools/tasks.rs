//! task_create, task_list, task_get, task_update and claim_task.

use crew_store::{Status, TaskId};
use crew_team::tools::{ClaimTask, TaskCreate, TaskGet, TaskList, TaskUpdate};
use crew_tools::ToolJson;
use serde_json::json;

use super::support::{Team, ok_json, refusal, run};

/// task_1 "design", task_2 "build" blocked by task_1, task_3 "review" for reviewers.
async fn three_tasks(team: &Team) {
    let create = TaskCreate::new(team.env("lead"));
    let ctx = team.ctx();
    let first = ok_json(
        &create,
        json!({"subject": "design", "description": "the API"}),
        &ctx,
    )
    .await;
    assert_eq!(first["created"], "task_1");
    let second = ok_json(
        &create,
        json!({"subject": "build", "blocked_by": ["1"]}),
        &ctx,
    )
    .await;
    assert_eq!(second["blockedBy"], json!(["task_1"]));
    ok_json(
        &create,
        json!({"subject": "review", "role": "reviewer"}),
        &ctx,
    )
    .await;
}

#[tokio::test]
async fn list_and_get_show_each_task_state() {
    let team = Team::new();
    let ctx = team.ctx();
    let list = TaskList::new(team.env("alice"));
    assert_eq!(run(&list, json!({}), &ctx).await.content, "no tasks yet");
    three_tasks(&team).await;
    ClaimTask::new(team.env("bob"))
        .call_json(&json!({"id": "task_3"}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(
        ok_json(&list, json!({}), &ctx).await,
        json!({"tasks": [
            {"id": "task_1", "subject": "design", "state": "claimable"},
            {"id": "task_2", "subject": "build", "state": "blocked by task_1"},
            {"id": "task_3", "subject": "review", "state": "running (bob)", "role": "reviewer"},
        ]})
    );
    let got = ok_json(
        &TaskGet::new(team.env("alice")),
        json!({"id": "task_2"}),
        &ctx,
    )
    .await;
    assert_eq!(got["description"], "");
    assert_eq!(got["status"], "pending");
    assert_eq!(got["state"], "blocked by task_1");
    assert_eq!(got["owner"], json!(null));
    let missing = refusal(
        &TaskGet::new(team.env("alice")),
        json!({"id": "task_9"}),
        &ctx,
    )
    .await;
    assert_eq!(missing, "no such task: task_9");
    let bad = refusal(
        &TaskGet::new(team.env("alice")),
        json!({"id": "../x"}),
        &ctx,
    )
    .await;
    // The schema's pattern refuses it, naming the field and the value.
    assert!(
        bad.contains("field `id`") && bad.contains("\"../x\" does not match"),
        "{bad}"
    );
}

#[tokio::test]
async fn create_checks_its_input_and_refuses_unknown_blockers() {
    let team = Team::new();
    let ctx = team.ctx();
    let create = TaskCreate::new(team.env("lead"));
    assert_eq!(
        refusal(&create, json!({"subject": "  "}), &ctx).await,
        "`subject` must not be empty"
    );
    let bad_role = refusal(&create, json!({"subject": "x", "role": "boss"}), &ctx).await;
    assert!(bad_role.contains("field `role`"), "{bad_role}");
    // A role crew knows but no teammate has: the task would sit claimable for ever.
    assert_eq!(
        refusal(&create, json!({"subject": "x", "role": "planner"}), &ctx).await,
        "no teammate has role `planner`, so nobody could claim it; the team's roles are \
         explorer, implementer, reviewer"
    );
    let bad_id = refusal(
        &create,
        json!({"subject": "x", "blocked_by": ["one"]}),
        &ctx,
    )
    .await;
    assert!(
        bad_id.contains("field `blocked_by.0`") && bad_id.contains("\"one\" does not match"),
        "{bad_id}"
    );
    assert_eq!(
        refusal(
            &create,
            json!({"subject": "x", "blocked_by": ["task_9"]}),
            &ctx
        )
        .await,
        "task_1 cannot be blocked by unknown task task_9"
    );
    assert!(team.workspace.tasks().load_all().unwrap().tasks.is_empty());
}

#[tokio::test]
async fn claim_by_id_refuses_blocked_claimed_and_other_roles() {
    let team = Team::new();
    let ctx = team.ctx();
    three_tasks(&team).await;
    let alice = ClaimTask::new(team.env("alice"));
    let carol = ClaimTask::new(team.env("carol"));
    assert_eq!(
        refusal(&alice, json!({"id": "task_2"}), &ctx).await,
        "task_2 is blocked by task_1"
    );
    assert_eq!(
        refusal(&alice, json!({"id": "task_3"}), &ctx).await,
        "task_3 needs role reviewer, but alice has role implementer"
    );
    let claimed = ok_json(&alice, json!({"id": "task_1"}), &ctx).await;
    assert_eq!(claimed["state"], "running (alice)");
    assert_eq!(claimed["description"], "the API");
    assert_eq!(
        refusal(&carol, json!({"id": "task_1"}), &ctx).await,
        "task_1 is already claimed by alice"
    );
    let task = team.workspace.tasks().read(TaskId(1)).unwrap();
    assert_eq!(task.owner.as_deref(), Some("alice"));
    assert_eq!(task.status, Status::InProgress);
}

#[tokio::test]
async fn claim_without_id_takes_the_oldest_that_fits_my_role() {
    let team = Team::new();
    let ctx = team.ctx();
    three_tasks(&team).await;
    let bob = ClaimTask::new(team.env("bob"));
    assert_eq!(ok_json(&bob, json!({}), &ctx).await["id"], "task_1");
    assert_eq!(ok_json(&bob, json!({}), &ctx).await["id"], "task_3");
    let carol = ClaimTask::new(team.env("carol"));
    assert_eq!(
        refusal(&carol, json!({}), &ctx).await,
        "no claimable task for carol",
        "task_2 waits for task_1 and task_3 is taken"
    );
}

#[tokio::test]
async fn only_the_owner_moves_a_task_out_of_progress() {
    let team = Team::new();
    let ctx = team.ctx();
    three_tasks(&team).await;
    let update_alice = TaskUpdate::new(team.env("alice"));
    let update_bob = TaskUpdate::new(team.env("bob"));
    assert_eq!(
        refusal(
            &update_alice,
            json!({"id": "task_1", "status": "completed"}),
            &ctx
        )
        .await,
        "task_1 is pending; only an in_progress task can be completed"
    );
    ok_json(
        &ClaimTask::new(team.env("alice")),
        json!({"id": "task_1"}),
        &ctx,
    )
    .await;
    assert_eq!(
        refusal(
            &update_bob,
            json!({"id": "task_1", "status": "completed"}),
            &ctx
        )
        .await,
        "task_1 is owned by alice, not bob"
    );
    let released = ok_json(
        &update_alice,
        json!({"id": "task_1", "status": "pending"}),
        &ctx,
    )
    .await;
    assert_eq!(released["state"], "claimable");
    ok_json(
        &ClaimTask::new(team.env("alice")),
        json!({"id": "task_1"}),
        &ctx,
    )
    .await;
    let done = ok_json(
        &update_alice,
        json!({"id": "task_1", "status": "completed", "result": "API in docs/api.md"}),
        &ctx,
    )
    .await;
    assert_eq!(done["state"], "done");
    assert_eq!(done["result"], "API in docs/api.md");
    let list = ok_json(&TaskList::new(team.env("bob")), json!({}), &ctx).await;
    assert_eq!(
        list["tasks"][1]["state"], "claimable",
        "task_2 is unblocked"
    );

    ok_json(
        &ClaimTask::new(team.env("alice")),
        json!({"id": "task_2"}),
        &ctx,
    )
    .await;
    assert_eq!(
        refusal(
            &update_alice,
            json!({"id": "task_2", "status": "failed"}),
            &ctx
        )
        .await,
        "a failed task needs a result saying why"
    );
    let failed = ok_json(
        &update_alice,
        json!({"id": "task_2", "status": "failed", "result": "the build server is gone"}),
        &ctx,
    )
    .await;
    assert_eq!(failed["state"], "failed");
}

#[tokio::test]
async fn edits_apply_and_a_cycle_is_refused() {
    let team = Team::new();
    let ctx = team.ctx();
    three_tasks(&team).await;
    let update = TaskUpdate::new(team.env("lead"));
    assert_eq!(
        refusal(&update, json!({"id": "task_1"}), &ctx).await,
        "nothing to change: give subject, description, blocked_by, status or assign_to"
    );
    assert_eq!(
        refusal(
            &update,
            json!({"id": "task_1", "result": "x", "subject": "y"}),
            &ctx
        )
        .await,
        "a result is recorded only with status completed or failed"
    );
    assert_eq!(
        refusal(
            &update,
            json!({"id": "task_1", "blocked_by": ["task_2"]}),
            &ctx
        )
        .await,
        "blockedBy would make a cycle: task_1 -> task_2 -> task_1"
    );
    let edited = ok_json(
        &update,
        json!({"id": "task_3", "subject": "review the build", "blocked_by": ["task_2"]}),
        &ctx,
    )
    .await;
    assert_eq!(edited["subject"], "review the build");
    assert_eq!(edited["state"], "blocked by task_2");
    let both = refusal(
        &update,
        json!({"id": "task_3", "description": "carefully", "status": "completed"}),
        &ctx,
    )
    .await;
    assert_eq!(
        both,
        "task_3 is pending; only an in_progress task can be completed\n(the other changes were saved)"
    );
    assert_eq!(
        team.workspace.tasks().read(TaskId(3)).unwrap().description,
        "carefully"
    );
}

#[test]
fn only_the_reading_tools_are_concurrency_safe() {
    let team = Team::new();
    let env = team.env("lead");
    let input = json!({"id": "task_1"});
    assert!(TaskList::new(env.clone()).is_concurrency_safe_json(&json!({})));
    assert!(TaskGet::new(env.clone()).is_concurrency_safe_json(&input));
    assert!(!TaskCreate::new(env.clone()).is_concurrency_safe_json(&input));
    assert!(!TaskUpdate::new(env.clone()).is_concurrency_safe_json(&input));
    assert!(!ClaimTask::new(env).is_concurrency_safe_json(&input));
}

#[tokio::test]
async fn the_lead_assigns_a_task_and_only_that_teammate_claims_it() {
    let team = Team::new();
    let ctx = team.ctx();
    three_tasks(&team).await;
    let update = TaskUpdate::new(team.env("lead"));
    let assigned = ok_json(&update, json!({"id": "task_1", "assign_to": "alice"}), &ctx).await;
    assert_eq!(
        (assigned["status"].as_str(), assigned["owner"].as_str()),
        (Some("pending"), Some("alice"))
    );
    let list = ok_json(&TaskList::new(team.env("carol")), json!({}), &ctx).await;
    assert_eq!(list["tasks"][0]["state"], "assigned to alice");

    // carol's claim of the next task skips it; alice's takes it first.
    let carol = ClaimTask::new(team.env("carol"));
    assert_eq!(
        refusal(&carol, json!({"id": "task_1"}), &ctx).await,
        "task_1 is already claimed by alice"
    );
    let alice = ok_json(&ClaimTask::new(team.env("alice")), json!({}), &ctx).await;
    assert_eq!(alice["id"], "task_1");

    // A reviewer task goes to a reviewer only; names must be teammates; teammates do not assign.
    assert_eq!(
        refusal(&update, json!({"id": "task_3", "assign_to": "alice"}), &ctx).await,
        "task_3 needs role reviewer, but alice has role implementer"
    );
    assert_eq!(
        refusal(&update, json!({"id": "task_3", "assign_to": "lead"}), &ctx).await,
        "unknown teammate \"lead\"; the team is: alice, bob, carol"
    );
    let by_alice = TaskUpdate::new(team.env("alice"));
    assert_eq!(
        refusal(&by_alice, json!({"id": "task_3", "assign_to": "bob"}), &ctx).await,
        "alice may not change task_3's owner: only the lead or the person assigns tasks; \
         claim_task takes one for yourself"
    );
    ok_json(&update, json!({"id": "task_3", "assign_to": "bob"}), &ctx).await;
    let back = ok_json(&update, json!({"id": "task_3", "assign_to": ""}), &ctx).await;
    assert_eq!(back["owner"], serde_json::Value::Null);
    let task = team.workspace.tasks().read(TaskId(3)).unwrap();
    assert_eq!(task.status, Status::Pending);
    assert!(
        task.notes
            .last()
            .unwrap()
            .ends_with("taken back from bob by lead")
    );
}

/// The store's rules reach the model as tool errors carrying the store's reason: a teammate
/// cannot rewrite another's task or what a task waits for, and a writing teammate cannot mark
/// its own task completed past review.
#[tokio::test]
async fn a_teammate_sees_the_stores_refusals_as_tool_errors() {
    let team = Team::new();
    let ctx = team.ctx();
    three_tasks(&team).await;
    let writer = std::sync::Arc::new(crew_team::tools::TeamEnv {
        writes: true,
        ..(*team.env("alice")).clone()
    });
    ok_json(
        &ClaimTask::new(writer.clone()),
        json!({"id": "task_1"}),
        &ctx,
    )
    .await;
    let update = TaskUpdate::new(writer);
    assert_eq!(
        refusal(
            &update,
            json!({"id": "task_1", "status": "completed"}),
            &ctx
        )
        .await,
        "task_1 is a writing teammate's task: it is completed only when review merges its \
         commits; end your turn and crew commits your work and submits it for review"
    );
    assert_eq!(
        refusal(&update, json!({"id": "task_2", "blocked_by": []}), &ctx).await,
        "alice may not change task_2's blockedBy: only the lead or the person changes a task's \
         subject and blockers"
    );
    let carol = TaskUpdate::new(team.env("carol"));
    assert!(
        refusal(&carol, json!({"id": "task_1", "description": "stop"}), &ctx)
            .await
            .starts_with("carol may not change task_1's description")
    );
    let notes = ok_json(
        &update,
        json!({"id": "task_1", "description": "notes"}),
        &ctx,
    )
    .await;
    assert_eq!(notes["status"], "in_progress");
    let task = team.workspace.tasks().read(TaskId(1)).unwrap();
    assert_eq!(
        (task.status, task.description.as_str()),
        (Status::InProgress, "notes")
    );
    assert_eq!(
        team.workspace.tasks().read(TaskId(2)).unwrap().blocked_by,
        [TaskId(1)]
    );
}
