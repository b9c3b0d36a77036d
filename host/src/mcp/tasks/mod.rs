//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, 2026-07-28):
//! a `tools/call` answered with a task handle at once, its call running on
//! through the same pipeline (policy, limits, redaction, audit), its state
//! and result kept in the state store ([`crate::state::tasks`]) where any
//! host of a fleet answers `tasks/get` and takes `tasks/cancel`.
//!
//! Which calls become tasks ([`Tasks::route`]): the server decides, per the
//! extension. A call becomes one when its tool allows it (the tool's spec,
//! overridden by `[policy.tools.NAME] task`) and the request declared the
//! extension; a tool that requires it refuses clients that did not. A call
//! whose policy asks for approval runs its approval round first (the
//! input-required exchange), and becomes a task on the retry that carries
//! the answer.
//!
//! This host's running tasks are watched ([`watch`]): each beat renews
//! their leases in the store, picks up cancellations requested through any
//! host, and writes their latest progress message.

mod run;
mod watch;
mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResponse, ClientCapabilities, ErrorCode};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use toolhost_core::TaskSupport;

use super::adapter;
use crate::cancel::CancelToken;
use crate::pipeline::{Call, Pipeline};
use crate::plan::tasks::TaskSettings;
use crate::state::tasks::TaskStore;

pub use wire::{not_found, to_detailed};

/// A task of this host that is still running.
struct Running {
    /// Cancels its call.
    cancel: CancelToken,
    /// Set when its owner asked for the cancel (so a cancelled result
    /// means `cancelled`, not an ordinary tool result).
    requested: Arc<std::sync::atomic::AtomicBool>,
    /// Its latest progress message, not yet written to the store.
    message: Arc<Mutex<Option<String>>>,
}

/// This host's tasks: the store, and the calls it runs.
pub struct Tasks {
    /// Opened at the first call that could become a task, not at start-up
    /// (a SQLite file or a PostgreSQL connection every `serve` would pay for
    /// before its first answer); `None` inside when it could not be opened
    /// (logged once): no call becomes a task, and a tool that requires one
    /// is refused.
    store: std::sync::OnceLock<Option<Arc<TaskStore>>>,
    pipeline: Arc<Pipeline>,
    /// This host's id in the store (`[host] host_id`, else hostname/pid).
    host_id: String,
    settings: TaskSettings,
    running: Mutex<HashMap<String, Running>>,
    /// Set once this host's earlier tasks are failed and the watch runs.
    ready: tokio::sync::OnceCell<()>,
}

impl Tasks {
    /// This host's tasks over the plan's task store (opened at first use);
    /// the first task operation fails what this host id left running in an
    /// earlier life and starts the watch.
    pub fn open(pipeline: Arc<Pipeline>) -> Arc<Tasks> {
        let plan = &pipeline.host().plan;
        Arc::new(Tasks {
            host_id: crate::state::config::host_id(&plan.host),
            settings: plan.host.tasks.clone(),
            store: std::sync::OnceLock::new(),
            pipeline,
            running: Mutex::new(HashMap::new()),
            ready: tokio::sync::OnceCell::new(),
        })
    }

    /// Before the first task operation (on the server's runtime, which
    /// may not exist yet when the server is made): fails the tasks this
    /// host id left running in an earlier life, and starts the watch.
    async fn ready(self: &Arc<Self>) {
        self.ready
            .get_or_init(|| async {
                watch::fail_earlier(self).await;
                watch::start(self);
            })
            .await;
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `request` runs as a task: `Ok(true)` to start one,
    /// `Ok(false)` for a plain call, an error when the tool runs only as a
    /// task and the client cannot take one.
    pub fn route(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<bool, ErrorData> {
        let host = self.pipeline.host();
        // A name this caller cannot see or that is unknown: the pipeline
        // answers it (with suggestions), revealing nothing here.
        let principal = adapter::http_principal(context);
        let Some(resolved) = host
            .resolve(&request.name)
            .filter(|_| self.pipeline.visible(principal, &request.name))
        else {
            return Ok(false);
        };
        let tool = &resolved.tool;
        let support = tool
            .names()
            .find_map(|n| host.plan.policy.tools.get(n).and_then(|r| r.task))
            .unwrap_or(tool.spec.execution.task);
        let client_can = adapter::is_stateless(context)
            && context.client_capabilities().is_some_and(|c| c.supports_tasks());
        // Approval first: its input-required round is answered before any
        // task exists; the retry carrying the answer may become one.
        let approval_pending =
            request.input_responses.is_none() && crate::pipeline::policy::may_ask(&host.plan, tool);
        match support {
            TaskSupport::Forbidden => Ok(false),
            TaskSupport::Allowed => Ok(client_can && !approval_pending && self.opened().is_some()),
            TaskSupport::Required if !client_can => Err(required(&tool.spec.name)),
            TaskSupport::Required if self.opened().is_none() => Err(ErrorData::internal_error(
                format!(
                    "tool '{}' runs only as a task, and the task store is unavailable on this host (see its log)",
                    tool.spec.name
                ),
                None,
            )),
            TaskSupport::Required => Ok(!approval_pending),
        }
    }

    /// Starts `call` for `owner` as a task and answers its handle, once
    /// the task is in the store.
    pub async fn start(self: &Arc<Self>, call: Call, owner: String) -> Result<CallToolResponse, ErrorData> {
        self.ready().await;
        run::start(self, call, owner).await
    }

    /// `tasks/get`: `owner`'s task `task_id`.
    pub async fn get(
        self: &Arc<Self>,
        task_id: &str,
        owner: &str,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.ready().await;
        let store = self.store()?;
        match store.get(task_id, owner).await.map_err(store_error)? {
            Some(record) => Ok(rmcp::model::GetTaskResult::new(to_detailed(&record))),
            None => Err(not_found(task_id, self.settings.ttl_secs)),
        }
    }

    /// `tasks/cancel`: asks the running host (this one, at once; another,
    /// at its next beat) to cancel `owner`'s task `task_id`.
    pub async fn cancel(self: &Arc<Self>, task_id: &str, owner: &str) -> Result<(), ErrorData> {
        self.ready().await;
        let store = self.store()?;
        if !store.request_cancel(task_id, owner).await.map_err(store_error)? {
            return Err(not_found(task_id, self.settings.ttl_secs));
        }
        self.stop(task_id);
        Ok(())
    }

    /// `tasks/update`: no task of this host asks for input, so there is
    /// never an outstanding request to answer; the responses are ignored,
    /// as the extension says, once the task is known to exist.
    pub async fn update(self: &Arc<Self>, task_id: &str, owner: &str) -> Result<(), ErrorData> {
        self.get(task_id, owner).await.map(|_| ())
    }

    /// Cancels this host's running task `task_id`, if it runs here.
    fn stop(&self, task_id: &str) {
        if let Some(running) = self.running().get(task_id) {
            running.requested.store(true, std::sync::atomic::Ordering::SeqCst);
            running.cancel.cancel();
        }
    }

    /// The task store, opened on the first call.
    fn opened(&self) -> Option<&Arc<TaskStore>> {
        self.store
            .get_or_init(|| match TaskStore::open(&self.pipeline.host().plan) {
                Ok(store) => Some(store),
                Err(e) => {
                    tracing::warn!("MCP tasks are off: cannot open the task store: {e}");
                    None
                }
            })
            .as_ref()
    }

    fn store(&self) -> Result<&Arc<TaskStore>, ErrorData> {
        self.opened().ok_or_else(|| {
            ErrorData::internal_error("the task store is unavailable on this host (see its log)", None)
        })
    }
}

/// The refusal of a tool that runs only as a task to a client that did
/// not declare the extension on its request.
fn required(tool: &str) -> ErrorData {
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "tool '{tool}' runs only as a task (the plan's [policy.tools.{tool}] task = \"required\"): \
             call it with protocol 2026-07-28 and the io.modelcontextprotocol/tasks extension in the \
             request's client capabilities"
        ),
        Some(serde_json::json!({ "requiredCapabilities": capabilities })),
    )
}

fn store_error(e: crate::state::StateError) -> ErrorData {
    ErrorData::internal_error(format!("the task store could not answer: {e}"), None)
}
