//! Batches: many calls, prepared in order, executed in conflict-free groups
//! (stage 5), results in input order.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Semaphore;
use toolhost_core::ToolResult;

use tracing::Instrument;

use super::{schedule, Call, Pipeline};

/// One JSONL line of `toolhost batch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    /// Tool name or alias.
    pub name: String,
    /// The input (default `{}`).
    #[serde(default = "empty_object")]
    pub input: Value,
    /// The caller's id for the call.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Runs a side-effecting call at most once per key.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl From<BatchItem> for Call {
    fn from(item: BatchItem) -> Call {
        Call {
            name: item.name,
            input: item.input,
            tool_call_id: item.tool_call_id,
            idempotency_key: item.idempotency_key,
            ..Call::default()
        }
    }
}

impl Pipeline {
    /// Runs `calls`: each is prepared (resolve, validate, policy, hooks) in
    /// order, then the runnable ones execute group by group, at most
    /// `host.batch_concurrency` at once. `done(finished, total)` is called
    /// as calls finish (for progress). Results come back in input order.
    pub async fn batch(self: &Arc<Self>, calls: Vec<Call>, done: impl Fn(usize, usize)) -> Vec<ToolResult> {
        let total = calls.len();
        let mut slots = Vec::with_capacity(total);
        let mut results: Vec<Option<ToolResult>> = (0..total).map(|_| None).collect();
        let mut runnable = Vec::new();
        // A call repeating an earlier call's idempotency key runs after the
        // groups, when it can replay that result (or be refused): preparing
        // it now would wait on a claim whose call has not started yet.
        let mut seen_keys = std::collections::HashSet::new();
        let mut repeats = Vec::new();
        for (i, call) in calls.into_iter().enumerate() {
            let mut slot = self.begin(&call);
            if let Some(key) = &call.idempotency_key {
                if !seen_keys.insert(key.clone()) {
                    repeats.push((i, call));
                    slots.push(slot);
                    continue;
                }
            }
            let id = slot.id.clone();
            let span = slot.span.clone();
            match self.prepare(&id, call, &mut slot.trace).instrument(span).await {
                Ok(prepared) => runnable.push((i, prepared)),
                Err(refusal) => results[i] = Some(refusal),
            }
            slots.push(slot);
        }

        let working_dir = self.host.plan.working_dir.clone();
        let accesses: Vec<_> = runnable
            .iter()
            .map(|(_, p)| schedule::access(&p.tool, &p.input, &working_dir))
            .collect();
        let groups = schedule::groups(&accesses);
        let limit = Arc::new(Semaphore::new(self.host.plan.host.batch_concurrency));
        let mut runnable: Vec<Option<(usize, super::Prepared)>> = runnable.into_iter().map(Some).collect();
        let mut finished = results.iter().filter(|r| r.is_some()).count();
        done(finished, total);
        for group in groups {
            let mut tasks = tokio::task::JoinSet::new();
            for k in group {
                let Some((i, prepared)) = runnable[k].take() else {
                    continue;
                };
                let mut trace = std::mem::take(&mut slots[i].trace);
                let span = slots[i].span.clone();
                let pipeline = self.clone();
                let limit = limit.clone();
                tasks.spawn(
                    async move {
                        let _permit = limit.acquire_owned().await;
                        let result = pipeline.run(prepared, &mut trace).await;
                        (i, result, trace)
                    }
                    .instrument(span),
                );
            }
            while let Some(joined) = tasks.join_next().await {
                match joined {
                    Ok((i, result, trace)) => {
                        slots[i].trace = trace;
                        results[i] = Some(result);
                    }
                    Err(e) => tracing::error!("a batch task failed: {e}"),
                }
                finished += 1;
                done(finished, total);
            }
        }

        for (i, call) in repeats {
            let id = slots[i].id.clone();
            let span = slots[i].span.clone();
            let trace = &mut slots[i].trace;
            let result = async {
                match self.prepare(&id, call, trace).await {
                    Ok(prepared) => self.run(prepared, trace).await,
                    Err(refusal) => refusal,
                }
            }
            .instrument(span)
            .await;
            results[i] = Some(result);
            finished += 1;
            done(finished, total);
        }

        slots
            .into_iter()
            .zip(results)
            .map(|(slot, result)| {
                let result = result.unwrap_or_else(|| {
                    ToolResult::failure(
                        &slot.id,
                        toolhost_core::Status::Error,
                        toolhost_core::wire::codes::INTERNAL,
                        "the call did not finish",
                    )
                });
                self.finish(slot, result)
            })
            .collect()
    }
}
